package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/rest"
	componentbaseconfig "k8s.io/component-base/config"

	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/sandbox"
)

// TestMain lets the test binary be a Sandbox's child, as convoy-apiserver's
// main does: New probes the render processes' network filter in a child of
// this very binary, which would otherwise run the tests again (and New
// again, and its probe, until the probe's deadline).
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == sandbox.ChildArg {
		os.Exit(sandbox.RunChild(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// panickingTransport panics on every request: a bug deep in a handler.
type panickingTransport struct{}

func (panickingTransport) RoundTrip(*http.Request) (*http.Response, error) { panic("injected panic") }

// A panic in a REST handler is a 500 that says what happened, and the
// server keeps serving. The server is built as convoy-apiserver builds it,
// with a client of its own cluster that panics, and served in process
// without authentication. The generic server would answer a panic with a
// 500 too, but by aborting the request with its own text ("This request
// caused apiserver to panic"), which a client through the aggregator sees as
// an unavailable service: the Status with the handler's message tells the
// project's recovery apart from the generic server's.
func TestAPanicInARESTHandlerIsA500(t *testing.T) {
	config := NewConfig()
	config.Generic.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	config.Generic.FeatureGate = utilfeature.DefaultFeatureGate
	config.Generic.LoopbackClientConfig = &rest.Config{Host: "https://127.0.0.1:1"}
	config.Generic.ExternalAddress = "127.0.0.1:6443"
	config.Extra = ExtraConfig{
		KubeConfig:        &rest.Config{Host: "https://127.0.0.1:1", Transport: panickingTransport{}},
		Render:            render.Limits{},
		RenderConcurrency: 1,
		LeaderElection:    componentbaseconfig.LeaderElectionConfiguration{LeaderElect: true},
	}
	server, err := config.Complete().New()
	require.NoError(t, err)
	handler := server.GenericAPIServer.Handler

	const releases = "/apis/subresources.convoy.kumodo.io/v1alpha1/namespaces/shop/releases/web/"
	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodGet, releases+"health", nil),
		httptest.NewRequest(http.MethodGet, releases+"diff", nil),
		httptest.NewRequest(http.MethodGet, releases+"preview", nil),
		httptest.NewRequest(http.MethodPost, releases+"sync", strings.NewReader(`{}`)),
		httptest.NewRequest(http.MethodGet, releases+"health", nil), // again
	} {
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusInternalServerError, rec.Code, "%s %s: %s", req.Method, req.URL, rec.Body.String())
		var status metav1.Status
		if assert.NoError(t, json.Unmarshal(rec.Body.Bytes(), &status), "%s %s: a Status, not the generic server's text: %s", req.Method, req.URL, rec.Body.String()) {
			assert.Equal(t, metav1.StatusReasonInternalError, status.Reason)
			assert.Contains(t, status.Message, "internal error (a bug of convoy-apiserver; the stack is in its log): injected panic", "%s %s", req.Method, req.URL)
		}
	}
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/subresources.convoy.kumodo.io/v1alpha1", nil))
	assert.Equal(t, http.StatusOK, rec.Code, "the server keeps serving")
	assert.Contains(t, rec.Body.String(), "releases/diff")
}
