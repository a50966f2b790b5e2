package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

const (
	pausedDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 5}
spec: {replicas: 3, paused: true}
status: {observedGeneration: 5, replicas: 3, readyReplicas: 3, availableReplicas: 3}
`
	readyDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop, generation: 2}
spec: {replicas: 2}
status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2}
`
	configMap = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {color: blue}
`
	colorRules = `apiVersion: convoy.kumodo.io/v1alpha1
kind: HealthRuleSet
metadata: {name: colors, namespace: shop}
spec:
  rules:
  - apiVersion: v1
    resources: [configmaps]
    expression: "object.?data.?color.orValue('') == 'green'"
    messageExpression: "'color is ' + object.?data.?color.orValue('none')"
`
	brokenRules = `apiVersion: convoy.kumodo.io/v1alpha1
kind: GlobalHealthRuleSet
metadata: {name: broken}
spec:
  rules:
  - apiVersion: v1
    resources: [configmaps]
    expression: "true"
    message: fine
  - apiVersion: v1
    resources: [configmaps]
    expression: "object.data.color ==="
    message: never
`
)

// runRulesTest runs kubectl convoy rules test args with stdin, offline.
func runRulesTest(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	streams, in, out, errOut := genericiooptions.NewTestIOStreams()
	in.WriteString(stdin)
	o := NewOptions(streams)
	o.isTerminal = func(io.Writer) bool { return false }
	root := NewCommandWithOptions(o)
	root.SetArgs(append([]string{"rules", "test"}, args...))
	code := Execute(context.Background(), root, errOut)
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestRulesTest(t *testing.T) {
	dir := t.TempDir()
	healthyFile := writeFile(t, dir, "healthy.yaml", readyDeployment+"---\n"+configMap)
	pausedFile := writeFile(t, dir, "paused.yaml", pausedDeployment)
	rulesDir := filepath.Join(dir, "rules")
	require.NoError(t, os.Mkdir(rulesDir, 0o700))
	writeFile(t, rulesDir, "colors.yaml", colorRules)
	writeFile(t, rulesDir, "notes.txt", "not read")
	brokenFile := writeFile(t, dir, "broken.yaml", brokenRules)

	for _, tc := range []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{name: "default rules, all healthy", args: []string{"-f", healthyFile}, code: 0,
			stdout: []string{"Deployment.apps   shop        api        Healthy", "ConfigMap         shop        settings   Healthy   -      no health rule applies"}},
		{name: "default rules, suspended", args: []string{"-f", pausedFile}, code: 1,
			stdout: []string{"Suspended", "rule 2 of GlobalHealthRuleSet convoy-default-apps", "the rollout is paused (spec.paused): 0 of 3 replicas updated, 3 available"}},
		{name: "stdin and a file", stdin: pausedDeployment, args: []string{"-f", "-", "-f", healthyFile}, code: 1,
			stdout: []string{"web", "api", "settings"}},
		{name: "a directory of rule sets replaces the defaults", args: []string{"--rules", rulesDir, "-f", pausedFile, "-f", healthyFile}, code: 1,
			stdout: []string{"Deployment.apps   shop        web        Healthy", "Progressing   rule 0 of HealthRuleSet shop/colors   color is blue"}},
		{name: "with the defaults too", args: []string{"--rules", rulesDir, "--with-defaults", "-f", pausedFile}, code: 1,
			stdout: []string{"Suspended"}},
		{name: "a rule that does not compile is named", args: []string{"--rules", brokenFile, "-f", healthyFile}, code: 2,
			stderr: "rule 1 of GlobalHealthRuleSet broken: expression does not compile"},
		{name: "no objects", args: []string{}, code: 2, stderr: "no objects"},
		{name: "not an object", stdin: "just: text\n", args: []string{"-f", "-"}, code: 2, stderr: "stdin document 1: object has no apiVersion"},
		{name: "a file that is not there", args: []string{"-f", filepath.Join(dir, "nope.yaml")}, code: 2, stderr: "nope.yaml"},
		{name: "rules that are not rule sets", args: []string{"--rules", healthyFile, "-f", healthyFile}, code: 2,
			stderr: "Deployment api is not a HealthRuleSet or a GlobalHealthRuleSet"},
		{name: "release and rules", args: []string{"--release", "web", "--rules", rulesDir, "-f", healthyFile}, code: 2,
			stderr: "--release and --rules cannot be used together"},
		{name: "unknown flag", args: []string{"--nope"}, code: 2, stderr: "unknown flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runRulesTest(t, tc.stdin, tc.args...)
			assert.Equal(t, tc.code, r.code, "%s\n%s", r.stdout, r.stderr)
			for _, s := range tc.stdout {
				assert.Contains(t, r.stdout, s)
			}
			if tc.stderr != "" {
				assert.Contains(t, r.stderr, tc.stderr)
			}
		})
	}
}

func TestRulesTestJSON(t *testing.T) {
	r := runRulesTest(t, pausedDeployment+"---\n"+configMap, "-f", "-", "-o", "json")
	require.Equal(t, 1, r.code, r.stderr)
	var got struct{ Results []RuleResult }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	assert.Equal(t, []RuleResult{
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", State: "Suspended",
			Rule: "rule 2 of GlobalHealthRuleSet convoy-default-apps", Message: "the rollout is paused (spec.paused): 0 of 3 replicas updated, 3 available"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings", State: "Healthy", Message: "no health rule applies"},
	}, got.Results)
}

// FuzzReadObjects: any input on stdin gives objects that each have an
// apiVersion and a kind, or an error; never a panic.
func FuzzReadObjects(f *testing.F) {
	for _, seed := range []string{pausedDeployment, pausedDeployment + "---\n" + configMap, "apiVersion: v1\nkind: List\nitems:\n- " + "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`, "---\n---\n", "kind: [", "apiVersion: v1\nkind: List\nitems: [1]\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := readObjects([]string{"-"}, bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, o := range objs {
			if o.GetAPIVersion() == "" || o.GetKind() == "" {
				t.Fatalf("object without apiVersion or kind from %q", data)
			}
		}
	})
}
