package sourcehttp

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// reason is the reason of err, a *failure.Error, or "".
func reason(err error) string {
	if f, ok := errors.AsType[*failure.Error](err); ok {
		return f.Reason
	}
	return ""
}

func TestGuard(t *testing.T) {
	big := strings.Repeat("x", 2048)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("chunked") != "" {
			w.(http.Flusher).Flush() // no Content-Length: the body's reader bounds it
		}
		_, _ = io.WriteString(w, big)
	}))
	defer srv.Close()
	tests := []struct {
		name          string
		url           string
		plainLoopback bool
		wantReason    string
	}{
		{name: "plain http off loopback is refused before a dial", url: "http://192.0.2.1/v2/", plainLoopback: true, wantReason: sourcefailure.ReasonSourceInvalid},
		{name: "plain http to loopback without the flag is refused", url: srv.URL + "/v2/", wantReason: sourcefailure.ReasonSourceInvalid},
		{name: "a blob is not bounded here", url: srv.URL + "/v2/app/blobs/sha256:1", plainLoopback: true},
		{name: "a manifest past the limit, by its length", url: srv.URL + "/v2/app/manifests/v1", plainLoopback: true, wantReason: sourcefailure.ReasonArtifactTooLarge},
		{name: "a manifest past the limit, as it is read", url: srv.URL + "/v2/app/manifests/v1?chunked=1", plainLoopback: true, wantReason: sourcefailure.ReasonArtifactTooLarge},
		{name: "a referrers index past the limit", url: srv.URL + "/v2/app/referrers/sha256:1?chunked=1", plainLoopback: true, wantReason: sourcefailure.ReasonArtifactTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dialer := &net.Dialer{Timeout: time.Second, Control: func(network, address string, _ syscall.RawConn) error {
				host, _, _ := net.SplitHostPort(address)
				if !net.ParseIP(host).IsLoopback() {
					t.Errorf("dialed %s", address)
					return errors.New("off loopback")
				}
				return nil
			}}
			c := New(Options{Dialer: dialer, PlainLoopback: tt.plainLoopback, MaxManifest: 1024})
			resp, err := c.HTTP.Get(tt.url)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if tt.wantReason == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.wantReason, reason(err), "%v", err)
		})
	}
}

func TestRedirectsKeepCredentialsToTheOrigin(t *testing.T) {
	var got []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, "other:"+r.Header.Get("Authorization"))
	}))
	defer other.Close()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, "origin:"+r.Header.Get("Authorization"))
		if r.URL.Path == "/index.yaml" {
			http.Redirect(w, r, "/moved/index.yaml", http.StatusFound)
			return
		}
		// The same host on another port is another origin.
		http.Redirect(w, r, other.URL+"/index.yaml", http.StatusFound)
	}))
	defer origin.Close()
	c := New(Options{Dialer: &net.Dialer{Timeout: time.Second}, PlainLoopback: true, MaxManifest: 1024})
	req, err := http.NewRequest(http.MethodGet, origin.URL+"/index.yaml", nil)
	require.NoError(t, err)
	req.SetBasicAuth("tenant", "secret")
	resp, err := c.HTTP.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, []string{"origin:Basic dGVuYW50OnNlY3JldA==", "origin:Basic dGVuYW50OnNlY3JldA==", "other:"}, got)
}
