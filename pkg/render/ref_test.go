package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

func obj(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	u.SetNamespace(namespace)
	return u
}

func TestNewSortsAndHashes(t *testing.T) {
	want := []*unstructured.Unstructured{
		obj("v1", "ConfigMap", "", "z"), // cluster-scoped first within a kind
		obj("v1", "ConfigMap", "a", "b"),
		obj("v1", "ConfigMap", "a", "c"),
		obj("v1", "ConfigMap", "b", "a"),
		obj("v1", "Service", "a", "a"),
		obj("apps/v1", "Deployment", "a", "a"),
		obj("apps/v1", "StatefulSet", "a", "a"),
		obj("example.com/v1", "Widget", "a", "a"),
	}
	in := slices.Clone(want)
	rand.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	shuffled := slices.Clone(in)

	out, err := New(in)
	require.NoError(t, err)
	assert.Equal(t, keys(want), keys(out.Objects))
	assert.Equal(t, keys(shuffled), keys(in), "New does not reorder its argument")

	// The ref is the definition: 16 hex digits of SHA-256 of the JSON array.
	maps := make([]map[string]any, len(want))
	for i, u := range want {
		maps[i] = u.Object
	}
	data, err := json.Marshal(maps)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	assert.Equal(t, hex.EncodeToString(sum[:])[:16], out.Ref)

	again, err := New(shuffled)
	require.NoError(t, err)
	assert.Equal(t, out.Ref, again.Ref)

	empty, err := New(nil)
	require.NoError(t, err)
	assert.Len(t, empty.Ref, 16)
	assert.Empty(t, empty.Objects)
}

func TestNewErrors(t *testing.T) {
	_, err := New([]*unstructured.Unstructured{obj("v1", "ConfigMap", "a", "x"), obj("v1", "ConfigMap", "a", "x")})
	var rerr *failure.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, ReasonManifestInvalid, rerr.Reason)
	assert.Contains(t, rerr.Message, "duplicate object ConfigMap a/x")

	_, err = New([]*unstructured.Unstructured{nil})
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, ReasonManifestInvalid, rerr.Reason)
}

func TestNewAfterJSONRoundTrip(t *testing.T) {
	// A render read back from the store (JSON decoded) has the same ref.
	r := newTestRenderer(configMap("src", map[string]string{"all.yaml": mutateManifests}))
	fresh := renderOK(t, r, release("src"))
	data, err := json.Marshal(fresh.Objects)
	require.NoError(t, err)
	var back []*unstructured.Unstructured
	require.NoError(t, json.Unmarshal(data, &back))
	stored, err := New(back)
	require.NoError(t, err)
	assert.Equal(t, fresh.Ref, stored.Ref)
}

func TestRenderDeterminism(t *testing.T) {
	const cmA = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {p: '1', q: '2'}}\ndata: {k: v, j: w}\n"
	const cmAReordered = "data: {j: w, k: v}\nmetadata: {labels: {q: '2', p: '1'}, name: a}\nkind: ConfigMap\napiVersion: v1\n"
	const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 2}\n"

	ref := func(data map[string]string) string {
		return renderOK(t, newTestRenderer(configMap("src", data)), release("src")).Ref
	}
	base := ref(map[string]string{"all.yaml": cmA + "---\n" + deploy})
	assert.Equal(t, base, ref(map[string]string{"all.yaml": cmA + "---\n" + deploy}), "same input")
	assert.Equal(t, base, ref(map[string]string{"all.yaml": deploy + "---\n" + cmAReordered}), "documents and fields reordered")
	assert.Equal(t, base, ref(map[string]string{"1.yaml": deploy, "2.json": `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","labels":{"q":"2","p":"1"}},"data":{"k":"v","j":"w"}}`}), "split across keys, JSON")
	assert.NotEqual(t, base, ref(map[string]string{"all.yaml": cmA + "---\n" + "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n"}), "one value changed")
}

func TestRenderChartDeterminism(t *testing.T) {
	render := func(values map[string]any) string {
		// buildChart writes the archive in map order: a new order each time.
		r := newTestRenderer(
			chartConfigMap("src", buildChart(t, "mychart", testChartFiles())),
			configMap("vals", map[string]string{"values.yaml": "image: {tag: '2.0'}\nshared: cm\n"}),
		)
		return renderOK(t, r, release("src", func(s *convoyv1alpha1.ReleaseSpec) {
			s.Content = &convoyv1alpha1.ReleaseContent{
				ValuesFrom: []convoyv1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "vals"}},
				Values:     raw(t, values),
			}
			s.Mutations = []convoyv1alpha1.Mutation{{Labels: map[string]string{"team": "a"}}}
		})).Ref
	}
	base := render(map[string]any{"replicas": 2})
	for range 5 {
		assert.Equal(t, base, render(map[string]any{"replicas": 2}))
	}
	assert.NotEqual(t, base, render(map[string]any{"replicas": 3}))
}
