package health

import (
	"context"
	"fmt"
	"testing"
	"time"

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
// rules (six) on one Deployment, on one goroutine, so the rates are per
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
		// Five rules, the fifth fails, and its messageExpression.
		{name: "progressing", obj: deploymentObject("web", 3, 1), want: ResultFail, programs: 5 + 1},
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

// benchPass is the inventory of one Release for the benchmark of a pass.
type benchPass struct {
	entries   []convoyv1alpha1.InventoryEntry
	apiVer    []string
	resources []string
	objects   []map[string]any
	prev      []*convoyv1alpha1.InventoryEntryStatus
}

// inventory1000 is 600 Deployments (one in ten with 1 of 3 replicas
// available), 200 Services (half LoadBalancer, a quarter of those without an
// address) and 200 ConfigMaps, which no default rule applies to.
func inventory1000() *benchPass {
	p := &benchPass{}
	add := func(group, version, kind, resource, name string, obj map[string]any) {
		p.entries = append(p.entries, convoyv1alpha1.InventoryEntry{
			ObjectKey: convoyv1alpha1.ObjectKey{Group: group, Kind: kind, Namespace: "shop", Name: name},
			Version:   version, RenderRef: renderA,
		})
		apiVersion := version
		if group != "" {
			apiVersion = group + "/" + version
		}
		p.apiVer = append(p.apiVer, apiVersion)
		p.resources = append(p.resources, resource)
		p.objects = append(p.objects, obj)
	}
	for i := range 600 {
		available := int64(3)
		if i%10 == 0 {
			available = 1
		}
		name := fmt.Sprintf("web-%03d", i)
		add("apps", "v1", "Deployment", "deployments", name, deploymentObject(name, 3, available))
	}
	for i := range 200 {
		name := fmt.Sprintf("svc-%03d", i)
		typ := "ClusterIP"
		if i%2 == 0 {
			typ = "LoadBalancer"
		}
		add("", "v1", "Service", "services", name, serviceObject(name, typ, i%8 != 0))
	}
	for i := range 200 {
		add("", "v1", "ConfigMap", "configmaps", fmt.Sprintf("cm-%03d", i), nil)
	}
	p.prev = make([]*convoyv1alpha1.InventoryEntryStatus, len(p.entries))
	return p
}

// run is one health pass: rules for each entry, evaluation (no read when no
// rule applies), the next state, the summary.
func (p *benchPass) run(ctx context.Context, rules *Rules, deadline *time.Duration, now time.Time, out []convoyv1alpha1.InventoryEntryStatus) convoyv1alpha1.HealthSummary {
	for i, e := range p.entries {
		applying := rules.For(p.apiVer[i], p.resources[i])
		var obj map[string]any
		if NeedsRead(applying) {
			obj = p.objects[i] // the GET of the health loop
		}
		out[i] = Assess(p.prev[i], e, Evaluate(ctx, applying, obj), nil, deadline, now)
	}
	return Summarize(out)
}

// BenchmarkAssess1000 measures one health pass over 1,000 inventory entries
// with the default rule sets. "cached" asks the compiler for the rules on
// every pass, as the loop does, and gets the programs compiled before the
// timer (no compilation happens: checked); "compile-every-pass" compiles
// the rule sets on every pass, to show what the cache saves.
func BenchmarkAssess1000(b *testing.B) {
	sets := defaultSelection(b)
	p := inventory1000()
	ctx := context.Background()
	deadline := dur(time.Minute)
	out := make([]convoyv1alpha1.InventoryEntryStatus, len(p.entries))
	check := func(b *testing.B, s convoyv1alpha1.HealthSummary) {
		if s.Total != 1000 || s.Healthy != 1000-60-25 || s.Progressing != 60+25 {
			b.Fatalf("unexpected summary %+v", s)
		}
	}
	// The statuses of the pass before.
	warm := NewCompiler(0)
	rules, err := warm.Compile(sets)
	if err != nil {
		b.Fatal(err)
	}
	check(b, p.run(ctx, rules, deadline, t0, out))
	for i := range out {
		p.prev[i] = out[i].DeepCopy()
	}

	b.Run("cached", func(b *testing.B) {
		compiled := warm.compilations.Load()
		b.ReportAllocs()
		for b.Loop() {
			rules, err := warm.Compile(sets)
			if err != nil {
				b.Fatal(err)
			}
			check(b, p.run(ctx, rules, deadline, at(10*time.Second), out))
		}
		if warm.compilations.Load() != compiled {
			b.Fatalf("compiled %d rule sets during the passes", warm.compilations.Load()-compiled)
		}
		b.ReportMetric(float64(b.N*len(p.entries))/b.Elapsed().Seconds(), "entries/s")
	})
	b.Run("compile-every-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rules, err := NewCompiler(0).Compile(sets)
			if err != nil {
				b.Fatal(err)
			}
			check(b, p.run(ctx, rules, deadline, at(10*time.Second), out))
		}
		b.ReportMetric(float64(b.N*len(p.entries))/b.Elapsed().Seconds(), "entries/s")
	})
}
