package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFile(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		want                []string // kind/name of each object
		err                 string
	}{
		{name: "YAML documents, empty ones skipped", file: "a.yaml",
			content: "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# only a comment\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
			want:    []string{"ConfigMap/a", "Deployment/web"}},
		{name: "a List is flattened", file: "list.yaml",
			content: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n",
			want:    []string{"ConfigMap/a", "Secret/s"}},
		{name: "concatenated JSON", file: "a.json",
			content: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}} {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`,
			want:    []string{"ConfigMap/a", "ConfigMap/b"}},
		{name: "JSON read as YAML", file: "-", content: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`,
			want: []string{"ConfigMap/a"}},
		// kubectl's builder reads a stream the same whatever the file is named.
		{name: "YAML in a .json file", file: "a.json", content: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
			want: []string{"ConfigMap/a"}},
		{name: "JSON, then YAML documents", file: "a.yaml",
			content: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}` + "\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n",
			want:    []string{"ConfigMap/a", "Secret/s"}},
		// The unstructured decoder takes any document with items for a
		// list, and gives its items that name no apiVersion and no kind
		// the list's apiVersion and its kind less "List".
		{name: "a typed list", file: "a.yaml",
			content: "apiVersion: v1\nkind: ConfigMapList\nitems:\n- metadata: {name: a}\n- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n",
			want:    []string{"ConfigMap/a", "Secret/s"}},
		{name: "a list in a list", file: "a.yaml",
			content: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items: [{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}]\n",
			want:    []string{"ConfigMap/a"}},
		{name: "a list of no items", file: "a.yaml", content: "apiVersion: v1\nkind: List\nitems: null\n"},
		{name: "items that are not an array", file: "a.yaml", content: "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\nitems: {a: 1}\n",
			err: "a.yaml document 1: Gadget items is not an array but an object"},
		{name: "an item of List with no kind", file: "a.yaml", content: "apiVersion: v1\nkind: List\nitems:\n- metadata: {name: a}\n",
			err: "a.yaml document 1: List item 1: object has no kind"},
		{name: "lists nested too deep", file: "a.yaml", content: strings.Repeat("{kind: List, apiVersion: v1, items: [", 9) + strings.Repeat("]}", 9),
			err: "lists nested more than 8 deep"},
		{name: "no kind", file: "a.yaml", content: "apiVersion: v1\nmetadata: {name: a}\n---\nfoo: [", err: `a.yaml document 1: object has no kind (apiVersion "v1", name "a")`},
		{name: "not YAML", file: "a.yaml", content: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nfoo: [", err: "a.yaml document 2: "},
		{name: "a List item that is not an object", file: "a.yaml", content: "apiVersion: v1\nkind: List\nitems: [3]\n", err: "a.yaml document 1: List item 1: not an object but a number"},
		// The YAML reader would take NUL bytes for an empty document.
		{name: "NUL bytes", file: "a.yaml", content: "\x00\x00\x00\x00", err: "a.yaml: a NUL byte at offset 0: the file is not text, neither YAML nor JSON"},
		{name: "a NUL byte in YAML", file: "a.yaml", content: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n\x00", err: "a.yaml: a NUL byte at offset 51: the file is not text"},
		{name: "a NUL byte in JSON", file: "a.json", content: "{}\x00", err: "a.json: a NUL byte at offset 2: the file is not text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := ParseFile(tc.file, []byte(tc.content))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				var perr *Error
				assert.True(t, errors.As(err, &perr), "an *Error")
				return
			}
			require.NoError(t, err)
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+"/"+o.GetName())
				assert.NoError(t, Validate(o))
			}
			assert.Equal(t, tc.want, got)
		})
	}
	objs, err := ParseFile("a.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, generation: 3}\n"))
	require.NoError(t, err)
	assert.IsType(t, int64(0), objs[0].Object["metadata"].(map[string]any)["generation"], "integers are int64")
}
