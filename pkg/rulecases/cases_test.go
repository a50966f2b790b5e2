package rulecases

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const blueConfigMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {color: blue}\n"

// writeCases writes files (name: content) into a new directory.
func writeCases(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	}
	return dir
}

func TestLoadFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, err string
	}{
		{"not YAML", "cases: [", "not a case file"},
		{"an unknown field", "cases:\n- name: a\n  state: Healthy\n  stat: x\n  objectFile: blue.yaml\n", `unknown field "stat"`},
		{"a top-level list", "- name: a\n  state: Healthy\n  objectFile: blue.yaml\n", "not a case file"},
		{"no cases", "cases: []\n", "no cases"},
		{"no name", "cases:\n- state: Healthy\n  objectFile: blue.yaml\n", "no name"},
		{"no state", "cases:\n- name: a\n  objectFile: blue.yaml\n", "no state"},
		{"Degraded", "cases:\n- name: a\n  state: Degraded\n  message: m\n  objectFile: blue.yaml\n", "no rule gives it"},
		{"an unknown state", "cases:\n- name: a\n  state: Sick\n  message: m\n  objectFile: blue.yaml\n", `unknown state "Sick"`},
		{"not Healthy, no message", "cases:\n- name: a\n  state: Progressing\n  objectFile: blue.yaml\n", "give message or messagePattern"},
		{"message and pattern", "cases:\n- name: a\n  state: Progressing\n  message: m\n  messagePattern: m\n  objectFile: blue.yaml\n", "give one"},
		{"a bad pattern", "cases:\n- name: a\n  state: Progressing\n  messagePattern: '('\n  objectFile: blue.yaml\n", "messagePattern: error parsing regexp"},
		{"object and objectFile", "cases:\n- name: a\n  state: Healthy\n  object: {apiVersion: v1, kind: ConfigMap}\n  objectFile: blue.yaml\n", "object and objectFile"},
		{"no object", "cases:\n- name: a\n  state: Healthy\n", "no object"},
		{"an object without a kind", "cases:\n- name: a\n  state: Healthy\n  object: {apiVersion: v1}\n", "Object 'Kind' is missing"},
		{"an object without an apiVersion", "cases:\n- name: a\n  state: Healthy\n  object: {kind: ConfigMap}\n", "an object has an apiVersion and a kind"},
		{"a list", "cases:\n- name: a\n  state: Healthy\n  object: {apiVersion: v1, kind: List, items: []}\n", "a case holds one object"},
		{"a missing object file", "cases:\n- name: a\n  state: Healthy\n  objectFile: nope.yaml\n", "nope.yaml: no such file"},
		{"two objects in a file", "cases:\n- name: a\n  state: Healthy\n  objectFile: two.yaml\n", "more than one document"},
		{"an object file above the case file", "cases:\n- name: a\n  state: Healthy\n  objectFile: ../outside.yaml\n", `"../outside.yaml" is not in the directory of the case file`},
		{"an absolute object file", "cases:\n- name: a\n  state: Healthy\n  objectFile: /etc/hostname\n", `"/etc/hostname" is not in the directory of the case file`},
		{"an object file that links out", "cases:\n- name: a\n  state: Healthy\n  objectFile: link.yaml\n", "path escapes from parent"},
		{"a name twice", "cases:\n- name: a\n  state: Healthy\n  objectFile: blue.yaml\n- name: a\n  state: Healthy\n  objectFile: blue.yaml\n", `two cases are named "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeCases(t, map[string]string{"cases.yaml": tc.file, "blue.yaml": blueConfigMap, "two.yaml": blueConfigMap + "---\n" + blueConfigMap})
			// A file beside the directory, and a link to it from inside.
			require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(dir), "outside.yaml"), []byte(blueConfigMap), 0o644))
			require.NoError(t, os.Symlink(filepath.Join(filepath.Dir(dir), "outside.yaml"), filepath.Join(dir, "link.yaml")))
			_, err := LoadFile(filepath.Join(dir, "cases.yaml"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			assert.Contains(t, err.Error(), "cases.yaml", "the error names the file")
		})
	}
}

func TestLoadFileTooLarge(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(p, make([]byte, MaxFileBytes+1), 0o600))
	_, err := LoadFile(p)
	assert.ErrorContains(t, err, "larger than 16 MiB")
}

func TestLoad(t *testing.T) {
	dir := writeCases(t, map[string]string{
		"cases/objects/blue.yaml": blueConfigMap,
		"cases/a.yaml":            "cases:\n- name: inline\n  state: Progressing\n  messagePattern: '^color'\n  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: n, generation: 3}}\n- name: from a file\n  state: Healthy\n  objectFile: objects/blue.yaml\n",
		"cases/notes.txt":         "not read",
		"tree/a.yaml":             "cases:\n- name: top\n  state: Healthy\n  object: {apiVersion: v1, kind: ConfigMap}\n",
		"tree/deeper/b.yml":       "cases:\n- name: deeper\n  state: Healthy\n  object: {apiVersion: v1, kind: ConfigMap}\n",
	})
	cases, err := Load([]string{filepath.Join(dir, "cases")}, false)
	require.NoError(t, err)
	require.Len(t, cases, 2)
	assert.Equal(t, "inline", cases[0].Name)
	assert.Equal(t, filepath.Join(dir, "cases", "a.yaml")+": inline", cases[0].ID())
	assert.Equal(t, int64(3), cases[0].object.GetGeneration(), "integers decode as the API machinery decodes them")
	assert.Equal(t, "b", cases[1].object.GetName(), "objectFile is relative to the case file")
	assert.NotNil(t, cases[0].pattern)

	cases, err = Load([]string{filepath.Join(dir, "tree")}, false)
	require.NoError(t, err)
	require.Len(t, cases, 1)
	cases, err = Load([]string{filepath.Join(dir, "tree")}, true)
	require.NoError(t, err)
	require.Len(t, cases, 2, "-R reads subdirectories")
	assert.Equal(t, "deeper", cases[1].Name)

	_, err = Load([]string{filepath.Join(dir, "empty")}, false)
	assert.ErrorContains(t, err, "no such file")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "empty"), 0o700))
	_, err = Load([]string{filepath.Join(dir, "empty")}, false)
	assert.ErrorContains(t, err, "no cases in")
}

// FuzzLoadFile: any case file loads or gives an error; never a panic, and a
// loaded case has an object with an apiVersion and a kind.
func FuzzLoadFile(f *testing.F) {
	for _, seed := range []string{
		"cases:\n- name: a\n  state: Healthy\n  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
		"cases:\n- name: a\n  state: Progressing\n  messagePattern: '^x+$'\n  objectFile: blue.yaml\n",
		"cases: [{name: a, state: Unknown, message: m, object: {apiVersion: v1, kind: List, items: [1]}}]",
		"cases:\n- name: a\n  state: Healthy\n  objectFile: ../../etc/passwd\n", "{}", "cases: 3",
	} {
		f.Add([]byte(seed))
	}
	dir := writeCases(f, map[string]string{"blue.yaml": blueConfigMap})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "cases.yaml")
		require.NoError(t, os.WriteFile(p, data, 0o600))
		cases, err := LoadFile(p)
		if err != nil {
			return
		}
		for _, c := range cases {
			if c.object.GetAPIVersion() == "" || c.object.GetKind() == "" {
				t.Fatalf("case %q without apiVersion or kind from %q", c.Name, data)
			}
		}
	})
}
