package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	defaultrules "github.com/kumodo/convoy-apiserver/artifacts/rules"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
	"github.com/kumodo/convoy-apiserver/pkg/health"
	"github.com/kumodo/convoy-apiserver/pkg/manifest"
)

// maxObjectFile bounds what rules test reads from one file or stdin.
const maxObjectFile = 64 << 20

// rulesTestOptions are the flags of `kubectl convoy rules test`.
type rulesTestOptions struct {
	*Options
	filenames    []string
	rulePaths    []string
	withDefaults bool
	release      string
	output       string
}

func newRulesCommand(o *Options) *cobra.Command {
	rules := &cobra.Command{
		Use:   "rules",
		Short: "Test health rules offline",
	}
	rules.AddCommand(newRulesTestCommand(o))
	return rules
}

func newRulesTestCommand(o *Options) *cobra.Command {
	t := &rulesTestOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "test -f FILE [-f FILE...]",
		Short: "Evaluate health rules on objects from files, as the health loop would",
		Long: `Evaluate health rules on objects read from files or stdin (-f -), offline, and
print for each object its state, the rule that decided it and its message.

The rules are, by default, the default rule sets of this version of convoy
(GlobalHealthRuleSets labeled convoy.kumodo.io/default: "true"). With --rules, the
HealthRuleSets and GlobalHealthRuleSets of those files or directories, all of them
(add --with-defaults to use the default sets too). With --release, the sets that
Release selects on the cluster, read with your credentials.

An object no rule applies to is Healthy. A failing rule gives Progressing (the
health loop turns it Degraded once the Release's deadline passes) or Suspended
(whenFalse: Suspended). A rule that cannot be evaluated gives Unknown.

Exit status: 0 when every object is Healthy, 1 when one is not, 2 on an error (a
file that does not parse, a rule that does not compile: the message names it).
Use it in CI to test your own rules on objects you saved, as Argo CD's Lua health
checks are tested with health_test.yaml.

Offline, the plural resource name a rule matches is guessed from the kind, as
kubectl does for a kind it does not know (Ingress: ingresses); with --release the
cluster's discovery gives it.`,
		Example: `  # The default rules on live objects
  kubectl get deploy,hpa -n shop -o yaml | kubectl convoy rules test -f -

  # Your rule sets on saved objects, in CI
  kubectl convoy rules test --rules health/ -f testdata/degraded-rollout.yaml

  # The rules Release web selects, on a saved object
  kubectl convoy rules test --release web -n shop -f certificate.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := t.Validate(); err != nil {
				return &ExitError{Code: exitWaitError, Err: err}
			}
			return t.Run(cmd)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &ExitError{Code: exitWaitError, Err: err} })
	cmd.Flags().StringSliceVarP(&t.filenames, "filename", "f", nil, "Files or directories (.yaml, .yml, .json) of objects to assess; - for stdin")
	cmd.Flags().StringSliceVar(&t.rulePaths, "rules", nil, "Files or directories of HealthRuleSets and GlobalHealthRuleSets to use instead of the default sets")
	cmd.Flags().BoolVar(&t.withDefaults, "with-defaults", false, "With --rules: use the default rule sets too")
	cmd.Flags().StringVar(&t.release, "release", "", "Use the rule sets this Release (in --namespace) selects on the cluster")
	cmd.Flags().StringVarP(&t.output, "output", "o", outputTable, "Output format: table, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outputTable, outputJSON, outputYAML}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Validate checks the flags.
func (t *rulesTestOptions) Validate() error {
	switch {
	case len(t.filenames) == 0:
		return errors.New("no objects: give -f FILE (or -f - for stdin)")
	case t.release != "" && len(t.rulePaths) > 0:
		return errors.New("--release and --rules cannot be used together")
	case t.withDefaults && len(t.rulePaths) == 0:
		return errors.New("--with-defaults goes with --rules")
	case t.output != outputTable && t.output != outputJSON && t.output != outputYAML:
		return fmt.Errorf("unknown output format %q: use table, json or yaml", t.output)
	}
	return nil
}

// RuleResult is what the rules say of one object.
type RuleResult struct {
	APIVersion string                     `json:"apiVersion"`
	Kind       string                     `json:"kind"`
	Namespace  string                     `json:"namespace,omitempty"`
	Name       string                     `json:"name"`
	State      convoyv1alpha1.HealthState `json:"state"`
	// Rule names the rule that decided the state; empty when every rule
	// passed or none applies.
	Rule    string `json:"rule,omitempty"`
	Message string `json:"message,omitempty"`
}

// Run reads the rules and the objects, evaluates and prints.
func (t *rulesTestOptions) Run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	objects, err := readObjects(t.filenames, t.Streams.In)
	if err != nil {
		return &ExitError{Code: exitWaitError, Err: err}
	}
	sets, mapper, err := t.ruleSets(cmd)
	if err != nil {
		return &ExitError{Code: exitWaitError, Err: err}
	}
	rules, err := health.NewCompiler(0).Compile(sets)
	if err != nil {
		return &ExitError{Code: exitWaitError, Err: fmt.Errorf("the rules do not compile: %w", err)}
	}

	results := make([]RuleResult, 0, len(objects))
	healthy := true
	for _, obj := range objects {
		gvk := obj.GroupVersionKind()
		resource := pluralOf(mapper, gvk)
		v := health.Evaluate(ctx, rules.For(gvk.GroupVersion().String(), resource), obj.Object)
		r := RuleResult{
			APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(),
			State: v.State(), Message: v.Message,
		}
		if v.Rule != nil {
			r.Rule = v.Rule.String()
		}
		healthy = healthy && r.State == convoyv1alpha1.HealthHealthy
		results = append(results, r)
	}
	if err := printRuleResults(t.Streams.Out, t.output, results); err != nil {
		return &ExitError{Code: exitWaitError, Err: err}
	}
	if !healthy {
		return &ExitError{Code: exitNotReached}
	}
	return nil
}

// ruleSets are the sets to evaluate, and the mapper that gives plurals (nil
// offline).
func (t *rulesTestOptions) ruleSets(cmd *cobra.Command) ([]health.RuleSet, meta.RESTMapper, error) {
	all := &convoyv1alpha1.HealthAssessment{
		GlobalRuleSetSelector: &convoyv1alpha1.LabelSelector{},
		LocalRuleSetSelector:  &convoyv1alpha1.LabelSelector{},
	}
	if t.release != "" {
		return t.releaseRuleSets(cmd)
	}
	var globals []*convoyv1alpha1.GlobalHealthRuleSet
	var locals []*convoyv1alpha1.HealthRuleSet
	if len(t.rulePaths) == 0 || t.withDefaults {
		g, _, err := readRuleSets(defaultrules.Files, []string{"."}, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("the default rule sets: %w", err)
		}
		globals = append(globals, g...)
	}
	if len(t.rulePaths) > 0 {
		g, l, err := readRuleSets(nil, t.rulePaths, t.Streams.In)
		if err != nil {
			return nil, nil, err
		}
		if len(g)+len(l) == 0 {
			return nil, nil, fmt.Errorf("no HealthRuleSet or GlobalHealthRuleSet in %s", strings.Join(t.rulePaths, ", "))
		}
		globals, locals = append(globals, g...), append(locals, l...)
	}
	sets, err := health.Select(all, globals, locals)
	return sets, nil, err
}

// releaseRuleSets are the sets the Release selects on the cluster.
func (t *rulesTestOptions) releaseRuleSets(cmd *cobra.Command) ([]health.RuleSet, meta.RESTMapper, error) {
	ctx := cmd.Context()
	cfg, err := t.Flags.ToRESTConfig()
	if err != nil {
		return nil, nil, err
	}
	namespace, _, err := t.Flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, nil, err
	}
	c, err := convoyclient.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	release, err := c.ConvoyV1alpha1().Releases(namespace).Get(ctx, t.release, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("reading release %s/%s: %w", namespace, t.release, err)
	}
	ha := release.Spec.HealthAssessment
	if ha == nil {
		return nil, nil, fmt.Errorf("release %s/%s has no spec.healthAssessment: its health is not assessed (NotConfigured)", namespace, t.release)
	}
	var globals []*convoyv1alpha1.GlobalHealthRuleSet
	if ha.GlobalRuleSetSelector != nil {
		list, err := c.ConvoyV1alpha1().GlobalHealthRuleSets().List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) {
			return nil, nil, fmt.Errorf("release %s/%s selects GlobalHealthRuleSets, which you may not list (cluster-scoped: bind convoy-view with a ClusterRoleBinding, or test the default sets offline without --release): %w", namespace, t.release, err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("listing GlobalHealthRuleSets: %w", err)
		}
		for i := range list.Items {
			globals = append(globals, &list.Items[i])
		}
	}
	var locals []*convoyv1alpha1.HealthRuleSet
	if ha.LocalRuleSetSelector != nil {
		list, err := c.ConvoyV1alpha1().HealthRuleSets(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("listing the HealthRuleSets of %s: %w", namespace, err)
		}
		for i := range list.Items {
			locals = append(locals, &list.Items[i])
		}
	}
	sets, err := health.Select(ha, globals, locals)
	if err != nil {
		return nil, nil, fmt.Errorf("release %s/%s: %w", namespace, t.release, err)
	}
	mapper, err := t.Flags.ToRESTMapper()
	if err != nil {
		return nil, nil, err
	}
	return sets, mapper, nil
}

// pluralOf is the resource name of gvk: from mapper when it knows the kind,
// else guessed from the kind.
func pluralOf(mapper meta.RESTMapper, gvk schema.GroupVersionKind) string {
	if mapper != nil {
		if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			return m.Resource.Resource
		}
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.Resource
}

// readObjects reads the objects of paths (files, directories of .yaml, .yml
// and .json files, or - for in), Lists flattened.
func readObjects(paths []string, in io.Reader) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	err := eachObject(nil, paths, in, func(_ string, obj *unstructured.Unstructured) error {
		out = append(out, obj)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no objects in %s", strings.Join(paths, ", "))
	}
	return out, nil
}

// readRuleSets reads the HealthRuleSets and GlobalHealthRuleSets of paths in
// fsys (the local file system when nil), strictly: an unknown field is an
// error. Other kinds are an error too.
func readRuleSets(fsys fs.FS, paths []string, in io.Reader) ([]*convoyv1alpha1.GlobalHealthRuleSet, []*convoyv1alpha1.HealthRuleSet, error) {
	var globals []*convoyv1alpha1.GlobalHealthRuleSet
	var locals []*convoyv1alpha1.HealthRuleSet
	err := eachObject(fsys, paths, in, func(where string, obj *unstructured.Unstructured) error {
		data, err := obj.MarshalJSON()
		if err != nil {
			return err
		}
		switch gvk := obj.GroupVersionKind(); gvk {
		case convoyv1alpha1.SchemeGroupVersion.WithKind("GlobalHealthRuleSet"):
			var set convoyv1alpha1.GlobalHealthRuleSet
			if err := yaml.UnmarshalStrict(data, &set); err != nil {
				return fmt.Errorf("%s: GlobalHealthRuleSet %s: %w", where, obj.GetName(), err)
			}
			globals = append(globals, &set)
		case convoyv1alpha1.SchemeGroupVersion.WithKind("HealthRuleSet"):
			var set convoyv1alpha1.HealthRuleSet
			if err := yaml.UnmarshalStrict(data, &set); err != nil {
				return fmt.Errorf("%s: HealthRuleSet %s: %w", where, obj.GetName(), err)
			}
			locals = append(locals, &set)
		default:
			return fmt.Errorf("%s: %s %s is not a HealthRuleSet or a GlobalHealthRuleSet of %s", where, gvk.Kind, obj.GetName(), convoyv1alpha1.SchemeGroupVersion)
		}
		return nil
	})
	return globals, locals, err
}

// eachObject calls fn with every object of the files of paths, in fsys (the
// local file system when nil; - is in), parsed as the render parses plain
// manifests (manifest.ParseFile).
func eachObject(fsys fs.FS, paths []string, in io.Reader, fn func(where string, obj *unstructured.Unstructured) error) error {
	readFile, stat, readDir := os.ReadFile, os.Stat, os.ReadDir
	if fsys != nil {
		readFile = func(name string) ([]byte, error) { return fs.ReadFile(fsys, name) }
		stat = func(name string) (fs.FileInfo, error) { return fs.Stat(fsys, name) }
		readDir = func(name string) ([]fs.DirEntry, error) { return fs.ReadDir(fsys, name) }
	}
	var files []string
	for _, p := range paths {
		if p == "-" {
			files = append(files, p)
			continue
		}
		info, err := stat(p)
		if err != nil {
			return err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := readDir(p)
		if err != nil {
			return err
		}
		var names []string
		for _, e := range entries {
			switch filepath.Ext(e.Name()) {
			case ".yaml", ".yml", ".json":
				if !e.IsDir() {
					names = append(names, filepath.Join(p, e.Name()))
				}
			}
		}
		sort.Strings(names)
		files = append(files, names...)
	}
	for _, f := range files {
		var data []byte
		var err error
		where := f
		if f == "-" {
			data, err = io.ReadAll(io.LimitReader(in, maxObjectFile+1))
			where = "stdin"
		} else {
			data, err = readFile(f)
		}
		if err != nil {
			return err
		}
		if len(data) > maxObjectFile {
			return fmt.Errorf("%s: larger than %d MiB", where, maxObjectFile>>20)
		}
		objs, err := manifest.ParseFile(where, f, data)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			if err := fn(where, obj); err != nil {
				return err
			}
		}
	}
	return nil
}

// printRuleResults writes results as a table, or as a JSON or YAML list.
func printRuleResults(w io.Writer, output string, results []RuleResult) error {
	switch output {
	case outputJSON, outputYAML:
		list := map[string]any{"results": results}
		var data []byte
		var err error
		if output == outputJSON {
			data, err = json.MarshalIndent(list, "", "  ")
		} else {
			data, err = yaml.Marshal(list)
		}
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "KIND\tNAMESPACE\tNAME\tSTATE\tRULE\tMESSAGE")
	for _, r := range results {
		gv, _ := schema.ParseGroupVersion(r.APIVersion)
		fmt.Fprintln(tw, strings.Join([]string{
			cell(kindGroup(gv.Group, r.Kind)), cell(r.Namespace), cell(r.Name), cell(string(r.State)), cell(r.Rule), cell(r.Message),
		}, "\t"))
	}
	return tw.Flush()
}
