package health

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

func deploymentObject(name string, replicas, available int64) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": name, "namespace": "shop", "generation": int64(4)},
		"spec":       map[string]any{"replicas": replicas},
		"status": map[string]any{
			"observedGeneration": int64(4),
			"replicas":           replicas,
			"updatedReplicas":    replicas,
			"readyReplicas":      available,
			"availableReplicas":  available,
			"conditions": []any{
				map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
				map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
			},
		},
	}
}

func serviceObject(name, typ string, ingress bool) map[string]any {
	status := map[string]any{"loadBalancer": map[string]any{}}
	if ingress {
		status["loadBalancer"] = map[string]any{"ingress": []any{map[string]any{"ip": "203.0.113.7"}}}
	}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   map[string]any{"name": name, "namespace": "shop"},
		"spec":       map[string]any{"type": typ, "ports": []any{map[string]any{"port": int64(80)}}},
		"status":     status,
	}
}

// BenchmarkEvaluate measures CEL evaluation alone: the default Deployment
// rules (four) on one Deployment, on one goroutine, so the rates are per
// core: objects/s counts Evaluate calls, cel-evals/s the CEL programs they
// run (rules and messageExpressions).
func BenchmarkEvaluate(b *testing.B) {
	rules, err := NewCompiler(0).Compile(defaultSelection(b))
	if err != nil {
		b.Fatal(err)
	}
	deployment := rules.For("apps/v1", "deployments")
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		obj  map[string]any
		want Result
		// programs is the number of CEL programs one evaluation runs.
		programs int
	}{
		// Every rule runs.
		{name: "healthy", obj: deploymentObject("web", 3, 3), want: ResultPass, programs: len(deployment)},
		// Every rule, the last fails, and its messageExpression.
		{name: "progressing", obj: deploymentObject("web", 3, 1), want: ResultFail, programs: len(deployment) + 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v := Evaluate(ctx, deployment, bc.obj); v.Result != bc.want {
					b.Fatalf("%s: %s", v.Result, v.Message)
				}
			}
			perSecond := float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(perSecond, "objects/s")
			b.ReportMetric(perSecond*float64(bc.programs), "cel-evals/s")
		})
	}
}

// inventory1000 is 600 Deployments (one in ten with 1 of 3 replicas
// available), 200 Services (half LoadBalancer, a quarter of those without an
// address) and 200 ConfigMaps, which no default rule applies to, with the
// Reader that serves them.
func inventory1000() (*convoyv1alpha1.ReleaseInventory, *memReader) {
	inv := &convoyv1alpha1.ReleaseInventory{}
	reader := newMemReader()
	reader.resources[schema.GroupVersionKind{Version: "v1", Kind: "Service"}] = "services"
	add := func(group, version, kind, name string, obj map[string]any) {
		key := convoyv1alpha1.ObjectKey{Group: group, Kind: kind, Namespace: "shop", Name: name}
		inv.Spec.Entries = append(inv.Spec.Entries, convoyv1alpha1.InventoryEntry{ObjectKey: key, Version: version, RenderRef: renderA})
		if obj != nil {
			reader.objects[key] = obj
		}
	}
	for i := range 600 {
		available := int64(3)
		if i%10 == 0 {
			available = 1
		}
		name := fmt.Sprintf("web-%03d", i)
		add("apps", "v1", "Deployment", name, deploymentObject(name, 3, available))
	}
	for i := range 200 {
		name := fmt.Sprintf("svc-%03d", i)
		typ := "ClusterIP"
		if i%2 == 0 {
			typ = "LoadBalancer"
		}
		add("", "v1", "Service", name, serviceObject(name, typ, i%8 != 0))
	}
	for i := range 200 {
		add("", "v1", "ConfigMap", fmt.Sprintf("cm-%03d", i), nil)
	}
	return inv, reader
}

// BenchmarkPass1000 measures one health pass (Pass) over 1,000 inventory
// entries with the default rule sets, reading from memory: rule lookup,
// evaluation (no read when no rule applies), the next states, the summary,
// the condition and the sync reasons. "cached" asks the compiler for the
// rules on every pass, as the loop does, and gets the programs compiled
// before the timer (no compilation happens: checked); "compile-every-pass"
// compiles the rule sets on every pass, to show what the cache saves.
func BenchmarkPass1000(b *testing.B) {
	sets := defaultSelection(b)
	inv, reader := inventory1000()
	ctx := context.Background()
	release := &convoyv1alpha1.Release{Spec: convoyv1alpha1.ReleaseSpec{HealthAssessment: &convoyv1alpha1.HealthAssessment{
		Deadline: &metav1.Duration{Duration: time.Minute}}}}
	check := func(b *testing.B, out Outcome) {
		if s := out.Summary; s == nil || s.Total != 1000 || s.Healthy != 1000-60-25 || s.Progressing != 60+25 {
			b.Fatalf("unexpected outcome %+v: %s", out.Summary, out.Condition.Message)
		}
	}
	// The statuses of the pass before.
	warm := NewCompiler(0)
	rules, err := warm.Compile(sets)
	if err != nil {
		b.Fatal(err)
	}
	out := Pass(ctx, Input{Release: release, Inventory: inv, Rules: rules, Reader: reader, Now: t0})
	check(b, out)
	inv.Status.Entries = out.Entries

	run := func(b *testing.B, compiler func() *Compiler) {
		b.ReportAllocs()
		for b.Loop() {
			rules, err := compiler().Compile(sets)
			if err != nil {
				b.Fatal(err)
			}
			check(b, Pass(ctx, Input{Release: release, Inventory: inv, Rules: rules, Reader: reader, Now: at(10 * time.Second)}))
		}
		b.ReportMetric(float64(b.N*len(inv.Spec.Entries))/b.Elapsed().Seconds(), "entries/s")
	}
	b.Run("cached", func(b *testing.B) {
		compiled := warm.compilations.Load()
		run(b, func() *Compiler { return warm })
		if warm.compilations.Load() != compiled {
			b.Fatalf("compiled %d rule sets during the passes", warm.compilations.Load()-compiled)
		}
	})
	b.Run("compile-every-pass", func(b *testing.B) {
		run(b, func() *Compiler { return NewCompiler(0) })
	})
}

// baselineRulesDir holds the default rule sets before issue 21.
const baselineRulesDir = "testdata/baseline-rules"

// caseObjects are the objects of every default-rule case of
// artifacts/rules/cases (pkg/rulecases reads and runs them; it imports this
// package, so the benchmark reads the objects alone), built-in kinds and
// custom resources.
func caseObjects(t testing.TB) []map[string]any {
	t.Helper()
	files, err := filepath.Glob("../../artifacts/rules/cases/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out []map[string]any
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var cases struct {
			Cases []struct {
				Object map[string]any `json:"object"`
			} `json:"cases"`
		}
		require.NoError(t, yaml.Unmarshal(data, &cases), f)
		for _, c := range cases.Cases {
			j, err := yaml.Marshal(c.Object)
			require.NoError(t, err)
			out = append(out, object(t, string(j)))
		}
	}
	return out
}

// kindsInventory1000 is 1,000 inventory entries cycling through the case
// objects (every kind the default rules cover, in each state), with the
// Reader that serves them.
func kindsInventory1000(t testing.TB) (*convoyv1alpha1.ReleaseInventory, *memReader) {
	inv := &convoyv1alpha1.ReleaseInventory{}
	reader := newMemReader()
	objects := caseObjects(t)
	for i := range 1000 {
		obj := objects[i%len(objects)]
		gvk := gvkOf(obj)
		reader.resources[gvk] = pluralOf(gvk)
		key := convoyv1alpha1.ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: "shop", Name: fmt.Sprintf("obj-%04d", i)}
		inv.Spec.Entries = append(inv.Spec.Entries, convoyv1alpha1.InventoryEntry{ObjectKey: key, Version: gvk.Version, RenderRef: renderA})
		reader.objects[key] = obj
	}
	return inv, reader
}

// BenchmarkPassRuleSets compares, in one run, a health pass over 1,000
// entries with today's default rule sets ("now", every file of
// artifacts/rules) and with the sets before issue 21 ("before", five sets
// for the built-in workloads), on two inventories: "workloads" is the mix
// of BenchmarkPass1000 (Deployments, Services, ConfigMaps), which both
// cover; "kinds" cycles through every kind the default rules now cover
// (HPAs, Ingresses, CronJobs and the custom resources, which the sets
// before did not read: no rule applied). reads/pass counts the objects the
// pass reads; in the health loop each is a GET as the Release's identity,
// made only for an object the shared metadata LIST saw change since its
// last verdict (VerdictCache).
func BenchmarkPassRuleSets(b *testing.B) {
	ctx := context.Background()
	release := &convoyv1alpha1.Release{Spec: convoyv1alpha1.ReleaseSpec{HealthAssessment: &convoyv1alpha1.HealthAssessment{
		Deadline: &metav1.Duration{Duration: time.Minute}}}}
	for _, inventory := range []struct {
		name string
		make func() (*convoyv1alpha1.ReleaseInventory, *memReader)
	}{
		{"workloads", inventory1000},
		{"kinds", func() (*convoyv1alpha1.ReleaseInventory, *memReader) { return kindsInventory1000(b) }},
	} {
		for _, sets := range []struct{ name, dir string }{{"before", baselineRulesDir}, {"now", defaultRulesDir}} {
			b.Run(inventory.name+"/"+sets.name, func(b *testing.B) {
				inv, reader := inventory.make()
				rules, err := NewCompiler(0).Compile(selectionOf(b, sets.dir))
				if err != nil {
					b.Fatal(err)
				}
				first := Pass(ctx, Input{Release: release, Inventory: inv, Rules: rules, Reader: reader, Now: t0})
				if first.Summary == nil || first.Summary.Total != 1000 || first.Summary.Unknown != 0 {
					b.Fatalf("unexpected outcome %+v: %s", first.Summary, first.Condition.Message)
				}
				inv.Status.Entries = first.Entries
				reads := len(reader.reads)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					reader.reads = reader.reads[:0]
					out := Pass(ctx, Input{Release: release, Inventory: inv, Rules: rules, Reader: reader, Now: at(10 * time.Second)})
					if *out.Summary != *first.Summary {
						b.Fatalf("summary %+v, first pass %+v", out.Summary, first.Summary)
					}
				}
				b.ReportMetric(float64(b.N*len(inv.Spec.Entries))/b.Elapsed().Seconds(), "entries/s")
				b.ReportMetric(float64(reads), "reads/pass")
			})
		}
	}
}

// BenchmarkCompileRuleSets compares the compilation of today's default rule
// sets with the five sets before issue 21, in the same run. The observer
// compiles a set once per generation (and once per process); the rules
// metric counts the rules compiled per op.
func BenchmarkCompileRuleSets(b *testing.B) {
	for _, sets := range []struct{ name, dir string }{{"before", baselineRulesDir}, {"now", defaultRulesDir}} {
		b.Run(sets.name, func(b *testing.B) {
			selection := selectionOf(b, sets.dir)
			n := 0
			for _, s := range selection {
				n += len(s.Rules)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NewCompiler(0).Compile(selection); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "rules")
		})
	}
}
