package cluster

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics/testutil"

	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// testResponseLimit is the limit of the tests: small, so that a body over it
// is quick to write.
const testResponseLimit = 1 << 20

// Kernel socket buffers on loopback hold a few MiB between the server's
// writes and the client's reads: a server that wrote less than the limit
// and this was stopped by the client.
const socketSlack = 16 << 20

// hugeBodyCap ends a huge body should the client never stop reading it (the
// code without a limit): the test then fails on what it asserts, without
// holding gigabytes.
const hugeBodyCap = 32 << 20

var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// How a fakeAPIServer answers the path it makes huge.
type hugeMode int

const (
	// chunked: a JSON body written in a loop, without Content-Length,
	// until the client hangs up.
	chunked hugeMode = iota
	// gzipped: the same body gzip-compressed, for a client that asks for
	// gzip: a few KiB on the wire inflate to the limit.
	gzipped
	// declared: a Content-Length far over the limit, and no body: the
	// server waits for the client to hang up.
	declared
)

// fakeAPIServer is an API server on 127.0.0.1 that serves the discovery of
// ConfigMaps, and ConfigMaps in the namespace shop, except for one path,
// which it answers with a huge body (hugeMode).
type fakeAPIServer struct {
	*httptest.Server
	hugePath string
	mode     hugeMode
	// gets and lists count the requests of ConfigMaps and their LISTs
	// that were answered normally.
	gets, lists atomic.Int32
	// written gets, for every huge answer, the bytes the server wrote of
	// its body once its handler ended (the client hung up).
	written chan int64
}

func newFakeAPIServer(t *testing.T, hugePath string, mode hugeMode) *fakeAPIServer {
	t.Helper()
	s := &fakeAPIServer{hugePath: hugePath, mode: mode, written: make(chan int64, 16)}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *fakeAPIServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == s.hugePath {
		s.huge(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch path := r.URL.Path; {
	case path == "/api":
		_, _ = io.WriteString(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`)
	case path == "/apis":
		_, _ = io.WriteString(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
	case path == "/api/v1":
		_, _ = io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["get","list"]}]}`)
	case path == "/api/v1/namespaces/shop/configmaps":
		s.lists.Add(1)
		_, _ = io.WriteString(w, `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"9"},"items":[]}`)
	case strings.HasPrefix(path, "/api/v1/namespaces/shop/configmaps/"):
		s.gets.Add(1)
		name := strings.TrimPrefix(path, "/api/v1/namespaces/shop/configmaps/")
		_, _ = io.WriteString(w, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","namespace":"shop","resourceVersion":"7"}}`)
	default:
		http.NotFound(w, r)
	}
}

// huge answers with a body far over testResponseLimit, shaped as what the
// path answers (a list, a ConfigMap), and reports the bytes it wrote.
func (s *fakeAPIServer) huge(w http.ResponseWriter, r *http.Request) {
	counter := &countingWriter{w: w}
	defer func() { s.written <- counter.n.Load() }()
	w.Header().Set("Content-Type", "application/json")
	if s.mode == declared {
		w.Header().Set("Content-Length", strconv.FormatInt(1<<40, 10))
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	var out io.Writer = counter
	if s.mode == gzipped {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			http.Error(w, "the client did not ask for gzip", http.StatusNotAcceptable)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(counter)
		defer zw.Close()
		out = zw
	}
	// 64 KiB elements: few enough objects that the code without a limit
	// decodes hugeBodyCap without much memory.
	payload := strings.Repeat("x", 64<<10)
	prefix, filler, suffix := `{"apiVersion":"v1","kind":"List","metadata":{},"items":[`,
		`{"metadata":{"name":"filler"},"name":"filler.example","versions":[],"data":{"k":"`+payload+`"}},`,
		`{"metadata":{"name":"last"},"name":"last.example","versions":[]}]}`
	switch {
	case s.hugePath == "/apis":
		prefix = `{"kind":"APIGroupList","apiVersion":"v1","groups":[`
	case strings.HasPrefix(s.hugePath, "/api/v1/namespaces/shop/configmaps/"):
		prefix, filler, suffix = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","namespace":"shop"},"data":{"big":"`, payload, `"}}`
	}
	if _, err := io.WriteString(out, prefix); err != nil {
		return
	}
	for written := 0; written < hugeBodyCap; written += len(filler) {
		if _, err := io.WriteString(out, filler); err != nil {
			return
		}
		if s.mode == gzipped {
			_ = out.(*gzip.Writer).Flush()
		}
		w.(http.Flusher).Flush()
	}
	_, _ = io.WriteString(out, suffix)
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// targetOf returns the Target of a Cluster whose kubeconfig points at srv,
// with the test's limit.
func targetOf(t *testing.T, srv *fakeAPIServer) *Access {
	t.Helper()
	f := newFixture(t, Options{AllowLoopback: true, MaxResponseBytes: testResponseLimit, Timeout: 5 * time.Second, ListFreshness: time.Minute},
		clusterObj("tenant", "tenant-kubeconfig", ""),
		secretObj("tenant-kubeconfig", map[string][]byte{"value": kubeconfig(t, srv.URL)}))
	access, err := f.provider.ForRelease(context.Background(), release("tenant"))
	require.NoError(t, err)
	return access
}

// tooLarge asserts that err carries ReasonResponseTooLarge, with a message
// that names the limit and its flag.
func tooLarge(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	f, ok := failure.Find(err, ReasonResponseTooLarge)
	require.True(t, ok, "no %s in %T: %v", ReasonResponseTooLarge, err, err)
	assert.Equal(t, ReasonResponseTooLarge, failure.ReasonOf(err), "the outermost reason of %v", err)
	assert.Contains(t, f.Message, "Cluster.convoy.kumodo.io team-a/tenant")
	assert.Contains(t, f.Message, "1048576 bytes, the limit of --max-target-response-bytes")
	assert.Empty(t, egress.NetworkFailure(err), "not an unreachable cluster")
}

// Every answer of a tenant's API server is bounded, through client-go's
// own clients: the read stops at the limit (the server is hung up on),
// with a reason of its own.
func TestResponsesAreBounded(t *testing.T) {
	RegisterMetrics()
	cases := []struct {
		name, path string
		mode       hugeMode
		operation  string
		call       func(context.Context, *Access) error
	}{
		{name: "discovery", path: "/apis", operation: "discovery", call: func(_ context.Context, a *Access) error {
			_, err := a.Target.Mapper.RESTMapping(configMapGVK.GroupKind(), configMapGVK.Version)
			return err
		}},
		{name: "GET of one object", path: "/api/v1/namespaces/shop/configmaps/big", operation: "read", call: func(ctx context.Context, a *Access) error {
			_, err := a.Reader(false).Get(ctx, configMapGVK, "shop", "big")
			return err
		}},
		{name: "LIST", path: "/api/v1/namespaces/shop/configmaps", operation: "list", call: func(ctx context.Context, a *Access) error {
			_, err := a.Target.Dynamic.Resource(configMaps).Namespace("shop").List(ctx, metav1.ListOptions{})
			return err
		}},
		{name: "metadata-only LIST", path: "/api/v1/namespaces/shop/configmaps", operation: "list", call: func(ctx context.Context, a *Access) error {
			_, err := a.Target.Snapshots.Get(ctx, configMaps, "shop")
			return err
		}},
		{name: "gzip inflating past the limit", path: "/api/v1/namespaces/shop/configmaps/big", mode: gzipped, operation: "read", call: func(ctx context.Context, a *Access) error {
			_, err := a.Reader(false).Get(ctx, configMapGVK, "shop", "big")
			return err
		}},
		{name: "Content-Length over the limit", path: "/api/v1/namespaces/shop/configmaps", mode: declared, operation: "list", call: func(ctx context.Context, a *Access) error {
			_, err := a.Target.Dynamic.Resource(configMaps).Namespace("shop").List(ctx, metav1.ListOptions{})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeAPIServer(t, tc.path, tc.mode)
			access := targetOf(t, srv)
			refused := targetResponsesTooLarge.WithLabelValues("team-a/tenant", tc.operation)
			before, err := testutil.GetCounterMetricValue(refused)
			require.NoError(t, err)
			refusalsBefore := refusalCount(t, ReasonResponseTooLarge)

			tooLarge(t, tc.call(context.Background(), access))

			// The guard only keeps a broken client from hanging the test.
			select {
			case n := <-srv.written:
				switch tc.mode {
				case declared:
					assert.Zero(t, n, "no body")
				default:
					assert.Less(t, n, int64(testResponseLimit+socketSlack), "the server wrote on: the client did not hang up")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the server still writes: the client did not hang up")
			}
			assert.Empty(t, srv.written, "one request: no retry")
			after, err := testutil.GetCounterMetricValue(refused)
			require.NoError(t, err)
			assert.Equal(t, before+1, after, "counted as %s", tc.operation)
			assert.Equal(t, refusalsBefore+1, refusalCount(t, ReasonResponseTooLarge), "counted as a refusal")
		})
	}
}

// A LIST page over the limit does not fail the pass: the read-ahead and
// the shared metadata-only LIST give up, and the objects are read one by
// one.
func TestListOverTheLimitReadsOneByOne(t *testing.T) {
	srv := newFakeAPIServer(t, "/api/v1/namespaces/shop/configmaps", chunked)
	access := targetOf(t, srv)
	ctx := context.Background()
	r := access.Reader(true)

	r.ReadAhead(ctx, desiredConfigMaps("a", "b", "c"))
	<-srv.written
	for _, name := range []string{"a", "b", "c"} {
		obj, err := r.Get(ctx, configMapGVK, "shop", name)
		require.NoError(t, err, name)
		assert.Equal(t, name, obj.GetName())
		_, _, known := r.ResourceVersion(ctx, configMapGVK, "shop", name)
		assert.False(t, known, "the shared LIST failed: read %s", name)
	}
	<-srv.written // the metadata-only LIST, once for the window
	assert.Equal(t, int32(3), srv.gets.Load(), "read one by one")
	assert.Equal(t, unlistable, r.knownSize(snapshotKey{resource: configMaps, namespace: "shop"}),
		"the next passes do not list it again")

	r = access.Reader(true)
	r.ReadAhead(ctx, desiredConfigMaps("a", "b", "c"))
	assert.Empty(t, srv.written, "not listed again")
}

// The limit holds for a body of any size up to it, and fails a body one
// byte over it, at that byte.
func TestLimitedBody(t *testing.T) {
	const limit = 100
	for _, tc := range []struct {
		name          string
		size          int
		contentLength int64
		wantRead      int
		wantErr       bool
	}{
		{name: "empty", size: 0, contentLength: -1},
		{name: "under", size: limit - 1, contentLength: -1, wantRead: limit - 1},
		{name: "exactly the limit", size: limit, contentLength: limit, wantRead: limit},
		{name: "exactly the limit, undeclared", size: limit, contentLength: -1, wantRead: limit},
		{name: "one byte over", size: limit + 1, contentLength: -1, wantRead: limit, wantErr: true},
		{name: "far over", size: 100 * limit, contentLength: -1, wantRead: limit, wantErr: true},
		{name: "declared over", size: limit + 1, contentLength: limit + 1, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &closeCounter{Reader: bytes.NewReader(bytes.Repeat([]byte("x"), tc.size))}
			next := roundTripperFunc(func(*http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: http.StatusOK, Body: body, ContentLength: tc.contentLength}, nil
			})
			req, err := http.NewRequest(http.MethodGet, "https://prod.example/api/v1/namespaces/shop/configmaps/x", nil)
			require.NoError(t, err)
			resp, err := limitingTransport{cluster: "team-a/prod", limit: limit, next: next}.RoundTrip(req)
			require.NoError(t, err)
			read, err := io.ReadAll(resp.Body)
			assert.Len(t, read, tc.wantRead)
			if !tc.wantErr {
				require.NoError(t, err)
				return
			}
			tooLarge := &failure.Error{}
			require.ErrorAs(t, err, &tooLarge)
			assert.Equal(t, ReasonResponseTooLarge, tooLarge.Reason)
			assert.Contains(t, tooLarge.Message, "the answer of the API server of Cluster.convoy.kumodo.io team-a/prod to GET /api/v1/namespaces/shop/configmaps/x")
			assert.Contains(t, tooLarge.Message, "100 bytes, the limit of --max-target-response-bytes")
			assert.Equal(t, 1, body.closed, "closed at the limit")
			_, again := resp.Body.Read(make([]byte, 10))
			assert.Same(t, tooLarge, again, "every read after it fails the same")
			assert.LessOrEqual(t, body.read, limit+1, "read no further than the byte past the limit")
		})
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// closeCounter counts the bytes read from it and its closes.
type closeCounter struct {
	io.Reader
	read, closed int
}

func (c *closeCounter) Read(p []byte) (int, error) {
	n, err := c.Reader.Read(p)
	c.read += n
	return n, err
}

func (c *closeCounter) Close() error {
	c.closed++
	return nil
}
