package receiver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2/ktesting"
)

// run starts e's listener and returns its base URL and a stop that waits
// for Run to end and checks it ended well.
func run(t *testing.T, e *env, scheme string) (string, func()) {
	t.Helper()
	require.NoError(t, e.l.Listen())
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.l.Run(ctx) }()
	return scheme + "://" + e.l.Addr().String(), func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(15 * time.Second):
			t.Fatal("Run did not end")
		}
	}
}

// post sends a signed GitHub push of main to base with client.
func post(t *testing.T, client *http.Client, base, id string) (*http.Response, string) {
	t.Helper()
	r := push(id)
	req, err := http.NewRequest(http.MethodPost, base+pathGitHub, bytes.NewReader(githubPush(appRepo, "refs/heads/main")))
	require.NoError(t, err)
	req.Header = r.Header
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

func TestRunPlainHTTP(t *testing.T) {
	e := newEnv(t, nil)
	assert.Nil(t, e.l.Addr())
	base, stop := run(t, e, "http")
	resp, body := post(t, http.DefaultClient, base, "r-1")
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, "accepted\n", body)
	assert.Len(t, e.refresher.refreshed(), 2)
	stop()
	_, err := net.DialTimeout("tcp", e.l.Addr().String(), time.Second)
	assert.Error(t, err, "the listener is closed")
}

func TestRunTLS(t *testing.T) {
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	require.NoError(t, err)
	provider, err := dynamiccertificates.NewStaticCertKeyContent("test", certPEM, keyPEM)
	require.NoError(t, err)

	e := newEnv(t, nil)
	o := NewOptions()
	o.BindAddress = "127.0.0.1:0"
	l, err := New(Config{Options: *o, Index: testIndex(), Releases: e.releases, Refresher: e.refresher, Cert: provider, Clock: e.clock})
	require.NoError(t, err)
	e.l = l
	base, stop := run(t, e, "https")
	defer stop()

	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	resp, body := post(t, client, base, "t-1")
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, "accepted\n", body)
	assert.Equal(t, "HTTP/1.1", resp.Proto, "HTTP/1.1 only")
	assert.GreaterOrEqual(t, resp.TLS.Version, uint16(tls.VersionTLS12))
	// The parsed pair is cached by content.
	first := e.l.certs.parsed
	resp, _ = post(t, &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}, base, "t-2")
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Same(t, first, e.l.certs.parsed)

	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS11}}}
	_, err = old.Post(base+pathGitHub, "application/json", nil)
	assert.Error(t, err, "TLS 1.1 is refused")
	plain, err := http.Post("http"+base[len("https"):]+pathGitHub, "application/json", nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, plain.StatusCode, "plain HTTP to the HTTPS port")
	plain.Body.Close()
}

func TestNewRefuses(t *testing.T) {
	o := NewOptions()
	o.BindAddress = "0.0.0.0:9443"
	_, err := New(Config{Options: *o, Index: testIndex(), Releases: &fakeReleases{}, Refresher: &recordingRefresher{}})
	assert.ErrorContains(t, err, "certificate")
	_, err = New(Config{Options: *o})
	assert.ErrorContains(t, err, "Index")
	o.PlainHTTP = true
	_, err = New(Config{Options: *o, Index: testIndex(), Releases: &fakeReleases{}, Refresher: &recordingRefresher{}})
	assert.ErrorContains(t, err, "loopback")
}
