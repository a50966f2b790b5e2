package errtext

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"

	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
)

// loopbackTransport dials loopback addresses only: a test must not send a
// packet anywhere else, not even to show a refusal.
func loopbackTransport(t *testing.T) http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			t.Errorf("dialed %s", addr)
			return nil, fmt.Errorf("test: %s is not a loopback address", addr)
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	return tr
}

// registryErrors are go-containerregistry's own errors, from its client
// against its registry (pkg/registry, through internal/ociregistry) that
// answers what a hostile registry would.
func TestGoContainerRegistryErrors(t *testing.T) {
	ctx := context.Background()
	var hook func(w http.ResponseWriter, r *http.Request) bool
	reg, err := ociregistry.Start(ociregistry.Options{Hook: func(w http.ResponseWriter, r *http.Request) bool {
		return hook != nil && hook(w, r)
	}})
	require.NoError(t, err)
	t.Cleanup(reg.Close)
	manifest, err := reg.PushChart(ctx, "charts/web", "1", []byte("chart bytes"), []byte(`{}`))
	require.NoError(t, err)
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(loopbackTransport(t))}
	ref := func(s string) name.Reference {
		r, err := name.ParseReference(reg.Host()+"/charts/web"+s, name.Insecure)
		require.NoError(t, err)
		return r
	}
	layer := ""
	{
		img, err := remote.Image(ref(":1"), opts...)
		require.NoError(t, err)
		m, err := img.Manifest()
		require.NoError(t, err)
		layer = m.Layers[0].Digest.String()
	}

	tests := []struct {
		name  string
		hook  func(w http.ResponseWriter, r *http.Request) bool
		do    func() error
		check func(error) bool
		not   func(error) bool
	}{{
		name: "a manifest fetched by digest that has another",
		hook: func(w http.ResponseWriter, r *http.Request) bool {
			if !strings.Contains(r.URL.Path, "/manifests/sha256:") {
				return false
			}
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			_, _ = w.Write([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","layers":[]}`))
			return true
		},
		do:    func() error { _, err := remote.Get(ref("@"+manifest), opts...); return err },
		check: DigestMismatch, not: RedirectRefused,
	}, {
		name: "a blob whose bytes are not its digest's",
		hook: func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+layer) {
				return false
			}
			_, _ = w.Write(bytes.Repeat([]byte("y"), len("chart bytes")))
			return true
		},
		do: func() error {
			l, err := remote.Layer(ref("@"+layer).Context().Digest(layer), opts...)
			if err != nil {
				return err
			}
			rc, err := l.Compressed()
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.ReadAll(rc)
			return err
		},
		check: DigestMismatch, not: RedirectRefused,
	}, {
		name: "a blob redirected to a private address literal, refused before a dial",
		hook: func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/") {
				return false
			}
			http.Redirect(w, r, "http://10.20.30.40/v2"+r.URL.Path, http.StatusTemporaryRedirect)
			return true
		},
		do: func() error {
			l, err := remote.Layer(ref("@"+layer).Context().Digest(layer), opts...)
			if err != nil {
				return err
			}
			rc, err := l.Compressed()
			if err == nil {
				rc.Close()
			}
			return err
		},
		check: RedirectRefused, not: DigestMismatch,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hook = tc.hook
			err := tc.do()
			require.Error(t, err)
			assert.True(t, tc.check(err), "the library's error is not recognised: %v", err)
			assert.False(t, tc.not(err), "the other function mistakes it: %v", err)
		})
	}
	hook = nil // a plain failure of the registry is neither
	_, err = remote.Get(ref(":missing"), opts...)
	require.Error(t, err)
	assert.False(t, DigestMismatch(err), "%v", err)
	assert.False(t, RedirectRefused(err), "%v", err)
}

// The Statuses are those k8s.io/apiserver builds for kube-apiserver.
func TestKubeAPIServerRefusals(t *testing.T) {
	convoy := &user.DefaultInfo{Name: "system:serviceaccount:convoy-system:convoy-apiserver"}
	forbidden := func(verb, resource string) string {
		return responsewriters.ForbiddenStatusError(authorizer.AttributesRecord{
			User: convoy, Verb: verb, Resource: resource, Namespace: "team-a", Name: "web", ResourceRequest: true,
		}, "").Error()
	}
	tests := []struct {
		name          string
		message       string
		impersonation bool
		admission     bool
	}{
		{name: "impersonation refused", message: forbidden("impersonate", "serviceaccounts"), impersonation: true},
		{name: "constrained impersonation refused", message: forbidden("impersonate-on:serviceaccount:get", "configmaps"), impersonation: true},
		{name: "authorization refused a patch", message: forbidden("patch", "deployments")},
		{name: "authorization refused a get of serviceaccounts", message: forbidden("get", "serviceaccounts")},
		{name: "a webhook denied", message: webhookerrors.ToStatusErr("deny.example.com", &metav1.Status{Message: "no latest tags"}).Error(), admission: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			who, ok := ImpersonationRefused(tc.message)
			assert.Equal(t, tc.impersonation, ok, tc.message)
			if ok {
				assert.Equal(t, convoy.Name, who)
			}
			assert.Equal(t, tc.admission, AdmissionDenied(tc.message), tc.message)
		})
	}
}

// The Go runtime's own texts; render's TestSandboxBoundsItsMemory gets one
// from a child that reaches its limit.
func TestOutOfMemory(t *testing.T) {
	for stderr, want := range map[string]bool{
		"fatal error: runtime: out of memory\n\ngoroutine 1 [running]:":                       true,
		"fatal error: runtime: cannot allocate memory":                                        true,
		"fatal error: out of memory allocating heap arena metadata":                           true,
		"runtime: goroutine stack exceeds 1000000000-byte limit\nfatal error: stack overflow": false,
		"panic: template: out of memory in the message":                                       false,
		"": false,
	} {
		assert.Equal(t, want, OutOfMemory(stderr), stderr)
	}
}
