package apiserver

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/rest"
	componentbaseconfig "k8s.io/component-base/config"

	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// panickingTransport panics on every request: a bug deep in a handler.
type panickingTransport struct{}

func (panickingTransport) RoundTrip(*http.Request) (*http.Response, error) { panic("injected panic") }

// A panic in a REST handler is a 500, and the server keeps serving. The
// server is built as convoy-apiserver builds it, with a client of its own
// cluster that panics, and served in process without authentication.
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

	for range 2 {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/subresources.convoy.kumodo.io/v1alpha1/namespaces/shop/releases/web/health", nil))
		assert.Equal(t, http.StatusInternalServerError, rec.Code, rec.Body.String())
	}
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/subresources.convoy.kumodo.io/v1alpha1", nil))
	assert.Equal(t, http.StatusOK, rec.Code, "the server keeps serving")
	assert.Contains(t, rec.Body.String(), "releases/diff")
}
