package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/cli-runtime/pkg/resource"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	defaultrules "github.com/kumodo/convoy-apiserver/artifacts/rules"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
	"github.com/kumodo/convoy-apiserver/pkg/health"
	"github.com/kumodo/convoy-apiserver/pkg/rulecases"
)

// maxObjectFile bounds what rules test reads from stdin.
const maxObjectFile = 64 << 20

// The exit codes of `kubectl convoy rules test`, its own (not wait's).
const (
	// rulesExitOK: every object is Healthy; with --cases, every case gives
	// its state and message (and, with --require-coverage, every rule is
	// exercised).
	rulesExitOK = 0
	// rulesExitNotAsExpected: an object is not Healthy; with --cases, a
	// case failed or (with --require-coverage) a rule is not exercised.
	rulesExitNotAsExpected = 1
	// rulesExitError: the command could not judge: a bad flag, a file that
	// cannot be read or parsed, rules that do not compile, a case file that
	// is not valid.
	rulesExitError = 2
)

// rulesTestOptions are the flags of `kubectl convoy rules test`.
type rulesTestOptions struct {
	*Options
	files           genericclioptions.FileNameFlags
	filenames       []string
	kustomize       string
	recursive       bool
	cases           []string
	requireCoverage bool
	rulePaths       []string
	withDefaults    bool
	release         string
	output          string
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
	t.files = genericclioptions.FileNameFlags{
		Usage:     "Files or directories of objects to assess (.yaml, .yml, .json); - for stdin",
		Filenames: &t.filenames, Kustomize: &t.kustomize, Recursive: &t.recursive,
	}
	cmd := &cobra.Command{
		Use:   "test (-f FILENAME | -k DIRECTORY | --cases FILENAME)",
		Short: "Evaluate health rules on objects from files, as the health loop would",
		Long: `Evaluate health rules on objects read from files, a kustomization or stdin
(-f, -k, -R, -f - as kubectl reads them), offline, and print for each object its
state, the rule that decided it and its message.

With --cases, run case files instead: each case is an object with the state and
the message (or a pattern of it) its author expects; rules test prints the cases
that fail, and which rule gave what. Every rule a case applies to is also
evaluated on its own: a rule that cannot be evaluated on the object, or whose
messageExpression gives no message, fails the case. --require-coverage fails
too when a rule is never passed or never failed by a case. The case file format
is in the users' documentation (docs/users/rule-cases.md).

The rules are, by default, the default rule sets of this version of convoy
(GlobalHealthRuleSets labeled convoy.kumodo.io/default: "true"). With --rules, the
HealthRuleSets and GlobalHealthRuleSets of those files or directories, all of them
(add --with-defaults to use the default sets too). With --release, the sets that
Release selects on the cluster, read with your credentials.

An object no rule applies to is Healthy. A failing rule gives Progressing (the
health loop turns it Degraded once the Release's deadline passes) or Suspended
(whenFalse: Suspended). A rule that cannot be evaluated gives Unknown.

Exit status (rules test's own):
  0  every object is Healthy; with --cases, every case passes
  1  an object is not Healthy; with --cases, a case fails (or, with
     --require-coverage, a rule is not exercised)
  2  no verdict: a bad flag, a file that cannot be read or parsed, a rule that
     does not compile, a case file that is not valid (the message names it)

Offline, the plural resource name a rule matches is guessed from the kind, as
kubectl does for a kind it does not know (Ingress: ingresses); with --release the
cluster's discovery gives it.`,
		Example: `  # The default rules on live objects
  kubectl get deploy,hpa -n shop -o yaml | kubectl convoy rules test -f -

  # Your rule sets on saved objects, in CI
  kubectl convoy rules test --rules health/ -f testdata/degraded-rollout.yaml

  # Your rule sets against their cases, every rule exercised both ways
  kubectl convoy rules test --rules health/ --cases health/cases/ --require-coverage

  # The rules Release web selects, on a saved object
  kubectl convoy rules test --release web -n shop -f certificate.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := t.Validate(); err != nil {
				return &ExitError{Code: rulesExitError, Err: err}
			}
			return t.Run(cmd)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &ExitError{Code: rulesExitError, Err: err} })
	t.files.AddFlags(cmd.Flags())
	cmd.Flags().StringSliceVar(&t.cases, "cases", nil, "Case files or directories of them to run (-R: their subdirectories too), instead of -f or -k")
	cmd.Flags().BoolVar(&t.requireCoverage, "require-coverage", false, "With --cases: exit 1 unless every rule passes on a case and fails on another")
	cmd.Flags().StringSliceVar(&t.rulePaths, "rules", nil, "Files or directories of HealthRuleSets and GlobalHealthRuleSets to use instead of the default sets")
	cmd.Flags().BoolVar(&t.withDefaults, "with-defaults", false, "With --rules: use the default rule sets too")
	cmd.Flags().StringVar(&t.release, "release", "", "Use the rule sets this Release (in --namespace) selects on the cluster")
	cmd.Flags().StringVarP(&t.output, "output", "o", outputTable, "Output format: table, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outputTable, outputJSON, outputYAML}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Validate checks the flags.
func (t *rulesTestOptions) Validate() error {
	objects := len(t.filenames) > 0 || t.kustomize != ""
	switch {
	case !objects && len(t.cases) == 0:
		return errors.New("no objects: give -f FILE (or -f - for stdin), -k DIRECTORY or --cases FILE")
	case objects && len(t.cases) > 0:
		return errors.New("--cases runs the objects of its cases: it cannot be used with -f or -k")
	case t.requireCoverage && len(t.cases) == 0:
		return errors.New("--require-coverage goes with --cases")
	case t.release != "" && len(t.rulePaths) > 0:
		return errors.New("--release and --rules cannot be used together")
	case t.withDefaults && len(t.rulePaths) == 0:
		return errors.New("--with-defaults goes with --rules")
	case t.output != outputTable && t.output != outputJSON && t.output != outputYAML:
		return fmt.Errorf("unknown output format %q: use table, json or yaml", t.output)
	}
	for _, f := range append(slices.Clone(t.filenames), t.rulePaths...) {
		if strings.HasPrefix(f, "http://") || strings.HasPrefix(f, "https://") {
			return fmt.Errorf("%s: rules test reads local files only", f)
		}
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

// Run reads the rules and the objects (or the cases), evaluates and prints.
func (t *rulesTestOptions) Run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	var cases []*rulecases.Case
	var objects []*unstructured.Unstructured
	var err error
	if len(t.cases) > 0 {
		cases, err = rulecases.Load(t.cases, t.recursive)
	} else {
		objects, err = readObjects(t.files.ToOptions(), t.Streams.In)
	}
	if err != nil {
		return &ExitError{Code: rulesExitError, Err: err}
	}
	sets, mapper, err := t.ruleSets(cmd)
	if err != nil {
		return &ExitError{Code: rulesExitError, Err: err}
	}
	rules, err := health.NewCompiler(0).Compile(sets)
	if err != nil {
		return &ExitError{Code: rulesExitError, Err: fmt.Errorf("the rules do not compile: %w", err)}
	}
	plural := func(gvk schema.GroupVersionKind) string { return pluralOf(mapper, gvk) }
	if cases != nil {
		return t.runCases(ctx, rules, plural, cases)
	}

	results := make([]RuleResult, 0, len(objects))
	healthy := true
	for _, obj := range objects {
		gvk := obj.GroupVersionKind()
		v := health.Evaluate(ctx, rules.For(gvk.GroupVersion().String(), plural(gvk)), obj.Object)
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
		return &ExitError{Code: rulesExitError, Err: err}
	}
	if !healthy {
		return &ExitError{Code: rulesExitNotAsExpected}
	}
	return nil
}

// runCases runs the cases and prints the report: in a table, the cases
// that fail and (with --require-coverage) the rules not exercised, then a
// summary line; in JSON or YAML, the whole report.
func (t *rulesTestOptions) runCases(ctx context.Context, rules *health.Rules, plural rulecases.PluralFunc, cases []*rulecases.Case) error {
	report := rulecases.Run(ctx, rules, plural, cases)
	failed, unexercised := report.Failed(), report.Unexercised()
	if err := printCaseReport(t.Streams.Out, t.output, report, failed, unexercised, t.requireCoverage); err != nil {
		return &ExitError{Code: rulesExitError, Err: err}
	}
	if len(failed) > 0 || t.requireCoverage && len(unexercised) > 0 {
		return &ExitError{Code: rulesExitNotAsExpected}
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
		g, err := defaultrules.Default()
		if err != nil {
			return nil, nil, fmt.Errorf("the default rule sets: %w", err)
		}
		globals = append(globals, g...)
	}
	if len(t.rulePaths) > 0 {
		g, l, err := readRuleSets(resource.FilenameOptions{Filenames: t.rulePaths, Recursive: t.recursive}, t.Streams.In)
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

// readObjects reads the objects of files as kubectl does (files,
// directories, -R, -k; - is in, read up to maxObjectFile), Lists flattened.
func readObjects(files resource.FilenameOptions, in io.Reader) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	err := eachObject(files, in, func(obj *unstructured.Unstructured) error {
		out = append(out, obj)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no objects in " + strings.Join(append(slices.Clone(files.Filenames), files.Kustomize), " "))
	}
	return out, nil
}

// readRuleSets reads the HealthRuleSets and GlobalHealthRuleSets of files,
// strictly: an unknown field is an error. Other kinds are an error too.
func readRuleSets(files resource.FilenameOptions, in io.Reader) ([]*convoyv1alpha1.GlobalHealthRuleSet, []*convoyv1alpha1.HealthRuleSet, error) {
	var globals []*convoyv1alpha1.GlobalHealthRuleSet
	var locals []*convoyv1alpha1.HealthRuleSet
	err := eachObject(files, in, func(obj *unstructured.Unstructured) error {
		data, err := obj.MarshalJSON()
		if err != nil {
			return err
		}
		switch gvk := obj.GroupVersionKind(); gvk {
		case convoyv1alpha1.SchemeGroupVersion.WithKind("GlobalHealthRuleSet"):
			var set convoyv1alpha1.GlobalHealthRuleSet
			if err := yaml.UnmarshalStrict(data, &set); err != nil {
				return fmt.Errorf("GlobalHealthRuleSet %s: %w", obj.GetName(), err)
			}
			globals = append(globals, &set)
		case convoyv1alpha1.SchemeGroupVersion.WithKind("HealthRuleSet"):
			var set convoyv1alpha1.HealthRuleSet
			if err := yaml.UnmarshalStrict(data, &set); err != nil {
				return fmt.Errorf("HealthRuleSet %s: %w", obj.GetName(), err)
			}
			locals = append(locals, &set)
		default:
			return fmt.Errorf("%s %s is not a HealthRuleSet or a GlobalHealthRuleSet of %s", gvk.Kind, obj.GetName(), convoyv1alpha1.SchemeGroupVersion)
		}
		return nil
	})
	return globals, locals, err
}

// eachObject calls fn with every object of files, read by cli-runtime's
// local builder as kubectl reads -f, -R and -k; - is in (at most
// maxObjectFile bytes), not the process's stdin.
func eachObject(files resource.FilenameOptions, in io.Reader, fn func(*unstructured.Unstructured) error) error {
	stdin := slices.Contains(files.Filenames, "-")
	files.Filenames = slices.DeleteFunc(slices.Clone(files.Filenames), func(f string) bool { return f == "-" })
	b := resource.NewLocalBuilder().Unstructured().FilenameParam(false, &files)
	if stdin {
		data, err := io.ReadAll(io.LimitReader(in, maxObjectFile+1))
		if err != nil {
			return fmt.Errorf("stdin: %w", err)
		}
		if len(data) > maxObjectFile {
			return fmt.Errorf("stdin: larger than %d MiB", maxObjectFile>>20)
		}
		b = b.Stream(bytes.NewReader(data), "stdin")
	}
	infos, err := b.Flatten().Do().Infos()
	if err != nil {
		return err
	}
	for _, info := range infos {
		obj, ok := info.Object.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("%s: %T is not an object", info.Source, info.Object)
		}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" {
			return fmt.Errorf("%s: an object without apiVersion or kind", info.Source)
		}
		if err := fn(obj); err != nil {
			return fmt.Errorf("%s: %w", info.Source, err)
		}
	}
	return nil
}

// printRuleResults writes results as a table, or as a JSON or YAML list.
func printRuleResults(w io.Writer, output string, results []RuleResult) error {
	if output == outputJSON || output == outputYAML {
		return printValue(w, output, map[string]any{"results": results})
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

// printCaseReport writes the report of a case run: as a table, one row per
// failure of a case, then (withCoverage) one per rule not exercised, then a
// summary; as JSON or YAML, the whole report.
func printCaseReport(w io.Writer, output string, report *rulecases.Report, failed []rulecases.Result, unexercised []rulecases.RuleCoverage, withCoverage bool) error {
	if output == outputJSON || output == outputYAML {
		return printValue(w, output, report)
	}
	tw := printers.GetNewTabWriter(w)
	if len(failed) > 0 {
		fmt.Fprintln(tw, "CASE\tSTATE\tRULE\tFAILURE")
		for _, r := range failed {
			for _, f := range r.Failures {
				fmt.Fprintln(tw, strings.Join([]string{cell(r.Case.ID()), cell(string(r.State)), cell(r.Rule), cell(f)}, "\t"))
			}
		}
	}
	if withCoverage && len(unexercised) > 0 {
		if len(failed) > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintln(tw, "RULE\tAPIVERSION\tRESOURCES\tPASSED\tFAILED")
		for _, c := range unexercised {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", cell(c.Rule), cell(c.APIVersion), cell(strings.Join(c.Resources, ",")), c.Passed, c.Failed)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d cases, %d failed; %d of %d rules not both passed and failed by a case\n",
		len(report.Results), len(failed), len(unexercised), len(report.Coverage))
	return err
}

// printValue writes v, a Go value (not an API object), as indented JSON or
// as YAML.
func printValue(w io.Writer, output string, v any) error {
	var data []byte
	var err error
	if output == outputJSON {
		data, err = json.MarshalIndent(v, "", "  ")
	} else {
		data, err = yaml.Marshal(v)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}
