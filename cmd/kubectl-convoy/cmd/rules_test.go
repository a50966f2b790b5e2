package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
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
	nestedDir := filepath.Join(dir, "nested")
	require.NoError(t, os.MkdirAll(filepath.Join(nestedDir, "deeper"), 0o700))
	writeFile(t, nestedDir, "healthy.yaml", readyDeployment+"---\n"+configMap)
	writeFile(t, filepath.Join(nestedDir, "deeper"), "paused.yaml", pausedDeployment)
	kustomizeDir := filepath.Join(dir, "overlay")
	require.NoError(t, os.Mkdir(kustomizeDir, 0o700))
	writeFile(t, kustomizeDir, "paused.yaml", pausedDeployment)
	writeFile(t, kustomizeDir, "kustomization.yaml", "resources: [paused.yaml]\n")
	casesFile := writeFile(t, dir, "cases.yaml", colorCases)

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
		{name: "not an object", stdin: "just: text\n", args: []string{"-f", "-"}, code: 2, stderr: "Object 'Kind' is missing"},
		{name: "no apiVersion", stdin: "kind: ConfigMap\nmetadata: {name: a}\n", args: []string{"-f", "-"}, code: 2, stderr: "stdin: an object without apiVersion or kind"},
		{name: "a file that is not there", args: []string{"-f", filepath.Join(dir, "nope.yaml")}, code: 2, stderr: "nope.yaml"},
		{name: "rules that are not rule sets", args: []string{"--rules", healthyFile, "-f", healthyFile}, code: 2,
			stderr: "Deployment api is not a HealthRuleSet or a GlobalHealthRuleSet"},
		{name: "release and rules", args: []string{"--release", "web", "--rules", rulesDir, "-f", healthyFile}, code: 2,
			stderr: "--release and --rules cannot be used together"},
		{name: "unknown flag", args: []string{"--nope"}, code: 2, stderr: "unknown flag"},
		{name: "a directory, recursively", args: []string{"-R", "-f", nestedDir}, code: 1,
			stdout: []string{"web", "api", "settings"}},
		{name: "a directory, not recursively", args: []string{"-f", nestedDir}, code: 0,
			stdout: []string{"api", "settings"}},
		{name: "a kustomization", args: []string{"-k", kustomizeDir}, code: 1,
			stdout: []string{"shop        web    Suspended"}},
		{name: "a URL is not read", args: []string{"-f", "https://example.invalid/objects.yaml"}, code: 2,
			stderr: "rules test reads local files only"},
		{name: "cases and objects", args: []string{"--cases", casesFile, "-f", healthyFile}, code: 2,
			stderr: "it cannot be used with -f or -k"},
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
		objs, err := readObjects(resource.FilenameOptions{Filenames: []string{"-"}}, bytes.NewReader(data))
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

const colorCases = `cases:
- name: green
  state: Healthy
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {color: green}}
- name: blue
  state: Progressing
  message: color is blue
  objectFile: blue.yaml
`

// TestRulesTestCases: --cases runs case files against the rules, prints the
// failures and exits with rules test's own codes.
func TestRulesTestCases(t *testing.T) {
	dir := t.TempDir()
	rulesFile := writeFile(t, dir, "colors.yaml", colorRules)
	writeFile(t, dir, "blue.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {color: blue}\n")
	passing := writeFile(t, dir, "cases.yaml", colorCases)
	wrong := writeFile(t, dir, "wrong.yaml", `cases:
- name: blue said green
  state: Healthy
  objectFile: blue.yaml
- name: blue, wrong message
  state: Progressing
  messagePattern: '^colour'
  objectFile: blue.yaml
`)
	greenOnly := writeFile(t, dir, "green.yaml", "cases:\n- name: green\n  state: Healthy\n  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {color: green}}\n")
	invalid := writeFile(t, dir, "invalid.yaml", "cases:\n- name: degraded\n  state: Degraded\n  message: m\n  objectFile: blue.yaml\n")

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{name: "every case passes, every rule exercised", args: []string{"--rules", rulesFile, "--cases", passing, "--require-coverage"}, code: 0,
			stdout: []string{"2 cases, 0 failed; 0 of 1 rules not both passed and failed by a case"}},
		{name: "failing cases are listed", args: []string{"--rules", rulesFile, "--cases", wrong}, code: 1,
			stdout: []string{"CASE", "wrong.yaml: blue said green", "state Progressing, want Healthy", `message "color is blue" does not match "^colour"`,
				"rule 0 of HealthRuleSet shop/colors", "2 cases, 2 failed"}},
		{name: "a rule never failed is not an error by default", args: []string{"--rules", rulesFile, "--cases", greenOnly}, code: 0,
			stdout: []string{"1 cases, 0 failed; 1 of 1 rules not both passed and failed by a case"}},
		{name: "nor with --require-coverage", args: []string{"--rules", rulesFile, "--cases", greenOnly, "--require-coverage"}, code: 1,
			stdout: []string{"RULE", "rule 0 of HealthRuleSet shop/colors   v1           configmaps   1        0"}},
		{name: "an invalid case file runs nothing", args: []string{"--rules", rulesFile, "--cases", passing, "--cases", invalid}, code: 2,
			stderr: "state Degraded: no rule gives it"},
		{name: "--require-coverage alone", args: []string{"-f", passing, "--require-coverage"}, code: 2,
			stderr: "--require-coverage goes with --cases"},
		{name: "the default rules and their cases", args: []string{"--cases", "../../../artifacts/rules/cases", "--require-coverage"}, code: 0,
			stdout: []string{" 0 failed; 0 of "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runRulesTest(t, "", tc.args...)
			assert.Equal(t, tc.code, r.code, "%s\n%s", r.stdout, r.stderr)
			for _, s := range tc.stdout {
				assert.Contains(t, r.stdout, s)
			}
			if tc.stderr != "" {
				assert.Contains(t, r.stderr, tc.stderr)
			}
		})
	}

	r := runRulesTest(t, "", "--rules", rulesFile, "--cases", wrong, "-o", "json")
	require.Equal(t, 1, r.code, r.stderr)
	var got struct {
		Results  []map[string]any
		Coverage []map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	require.Len(t, got.Results, 2)
	assert.Equal(t, "blue said green", got.Results[0]["name"])
	assert.Equal(t, "Progressing", got.Results[0]["state"])
	assert.Equal(t, []any{"state Progressing, want Healthy"}, got.Results[0]["failures"])
	assert.Equal(t, float64(2), got.Coverage[0]["failed"])
}

// TestRulesCasesDocExample runs the example of docs/users/rule-cases.md:
// the files of its blocks marked <!-- rule-cases: PATH -->, the command of
// the block marked command, whose output is the block marked output.
func TestRulesCasesDocExample(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/users/rule-cases.md")
	require.NoError(t, err)
	dir := t.TempDir()
	var command []string
	var output string
	blocks := regexp.MustCompile("(?s)<!-- rule-cases: (\\S+) -->\n```\\w*\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	require.Len(t, blocks, 5)
	for _, b := range blocks {
		switch path, body := b[1], b[2]; path {
		case "command":
			command = strings.Fields(body)
		case "output":
			output = body
		default:
			require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o700))
			writeFile(t, dir, path, body)
		}
	}
	require.Equal(t, []string{"kubectl", "convoy", "rules", "test"}, command[:4])
	t.Chdir(dir)
	r := runRulesTest(t, "", command[4:]...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, output, r.stdout)
}
