package health

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// defaultRulesDir holds the default GlobalHealthRuleSets.
const defaultRulesDir = "../../artifacts/rules"

// object decodes a YAML object as the API machinery does for
// unstructured.Unstructured: integers are int64, not float64.
func object(t testing.TB, s string) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(s))
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, utiljson.Unmarshal(j, &obj))
	return obj
}

// loadDefaults reads every file of artifacts/rules as a GlobalHealthRuleSet,
// strictly, and returns them sorted by file name with a UID and a
// generation, as the API server would give them.
func loadDefaults(t testing.TB) (files []string, sets []*convoyv1alpha1.GlobalHealthRuleSet) {
	t.Helper()
	return loadRuleSetDir(t, defaultRulesDir)
}

// loadRuleSetDir is loadDefaults for the GlobalHealthRuleSets of dir.
func loadRuleSetDir(t testing.TB, dir string) (files []string, sets []*convoyv1alpha1.GlobalHealthRuleSet) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".yaml" {
			continue
		}
		files = append(files, e.Name())
	}
	sort.Strings(files)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		var set convoyv1alpha1.GlobalHealthRuleSet
		require.NoError(t, yaml.UnmarshalStrict(data, &set), f)
		set.UID = types.UID("uid-" + set.Name)
		set.Generation = 1
		sets = append(sets, &set)
	}
	return files, sets
}

// defaultSelection is what a Release that selects the default rule sets
// gets.
func defaultSelection(t testing.TB) []RuleSet {
	t.Helper()
	return selectionOf(t, defaultRulesDir)
}

// selectionOf is defaultSelection for the rule sets of dir.
func selectionOf(t testing.TB, dir string) []RuleSet {
	t.Helper()
	_, globals := loadRuleSetDir(t, dir)
	sets, err := Select(&convoyv1alpha1.HealthAssessment{
		GlobalRuleSetSelector: &convoyv1alpha1.LabelSelector{MatchLabels: map[string]string{"convoy.kumodo.io/default": "true"}},
	}, globals, nil)
	require.NoError(t, err)
	require.Len(t, sets, len(globals))
	return sets
}

// builtinMapper maps the kinds the default rules cover, and ConfigMap.
func builtinMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "apps", Version: "v1", Kind: "StatefulSet"},
		{Group: "apps", Version: "v1", Kind: "DaemonSet"},
		{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
		{Group: "batch", Version: "v1", Kind: "Job"},
		{Group: "batch", Version: "v1", Kind: "CronJob"},
		{Version: "v1", Kind: "Pod"},
		{Version: "v1", Kind: "PersistentVolumeClaim"},
		{Version: "v1", Kind: "Service"},
		{Version: "v1", Kind: "ConfigMap"},
	} {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	m.Add(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}, meta.RESTScopeRoot)
	return m
}

// gvkOf returns the group, version and kind of obj.
func gvkOf(obj map[string]any) schema.GroupVersionKind {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return gv.WithKind(kind)
}

// pluralOf is the resource name of gvk: from builtinMapper for the kinds it
// maps, else guessed from the kind, as the projects covered name their
// custom resources (Prometheus: prometheuses).
func pluralOf(gvk schema.GroupVersionKind) string {
	if m, err := builtinMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
		return m.Resource.Resource
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.Resource
}

// rulesFor returns the rules of rules that apply to obj.
func rulesFor(rules *Rules, obj map[string]any) []*CompiledRule {
	gvk := gvkOf(obj)
	return rules.For(gvk.GroupVersion().String(), pluralOf(gvk))
}
