package render

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// manyConfigMaps is a manifest of n ConfigMaps.
func manyConfigMaps(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d}\ndata: {v: %q}\n", i, strings.Repeat("x", 100))
	}
	return b.String()
}

func TestRenderLimits(t *testing.T) {
	src := configMap("src", map[string]string{"all.yaml": manyConfigMaps(50)})
	renderer := func(l Limits) *Renderer {
		return testEngine(l).Renderer(source.ClientInputs{Client: fake.NewClientset(src)}, MapperScoper{Mapper: testMapper()})
	}
	renderOK(t, renderer(Limits{MaxObjects: 50}), release("src"))

	rerr := renderErr(t, renderer(Limits{MaxObjects: 49}), release("src"), ReasonTooManyObjects)
	assert.Equal(t, "the render holds 50 objects, more than the limit of 49 (--max-render-objects)", rerr.Message)

	rerr = renderErr(t, renderer(Limits{MaxBytes: 4096}), release("src"), ReasonRenderTooLarge)
	assert.Contains(t, rerr.Message, "more than the limit of 4096 (--max-render-bytes)")
}

// A render-store Secret of a few hundred KiB that inflates to 300 MB is
// refused at the limit, without inflating it whole.
func TestStoredRenderInflatingPastTheLimit(t *testing.T) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	_, err = zw.Write([]byte("["))
	require.NoError(t, err)
	for range 300 {
		_, err = zw.Write(chunk)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.Less(t, buf.Len(), MaxStoredSize, "it fits in a Secret")

	const ref = "0123456789abcdef"
	client := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: SecretName("web", ref)},
		Type:       SecretType, Data: map[string][]byte{SecretKey: buf.Bytes()},
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = testEngine(Limits{MaxBytes: 8 << 20}).Store(client).Get(context.Background(), "shop", "web", ref)
	runtime.ReadMemStats(&after)
	var rerr *failure.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, ReasonStoredRenderTooLarge, rerr.Reason)
	assert.Contains(t, rerr.Message, "inflates past the limit of 8388608 bytes (--max-render-bytes)")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "allocated far less than the 8 MiB it may inflate to: the spaces are not kept")
}

// An Engine fetches with the Fetcher it is given: there is no package-level
// one to fall back on.
func TestNewEngineNeedsAFetcher(t *testing.T) {
	assert.PanicsWithValue(t, "render.NewEngine: no source.Fetcher", func() { NewEngine(nil, nil, Limits{}) })
}
