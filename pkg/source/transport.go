package source

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/kumodo/convoy-apiserver/pkg/bounded"
	"github.com/kumodo/convoy-apiserver/pkg/cosign"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// maxRedirects bounds the redirects a repository request follows.
const maxRedirects = 5

// client is the HTTP client of one set of TLS settings: every connection
// through the address policy (the dialer refuses what it refuses, after DNS
// resolution, before a packet is sent), no proxy of the environment, https
// only (plain http to a loopback address for local development only).
type client struct {
	// transport is for the registry client, which adds the credentials
	// itself, to the registry's host only.
	transport http.RoundTripper
	// http is for Helm repositories: a redirect to another origin (scheme,
	// host and port) loses the credentials.
	http *http.Client
}

// clientFor returns the client of the TLS settings tlsCfg (nil: the system
// roots), whose hash is tlsKey; clients are kept, with their connections.
func (f *Fetcher) clientFor(tlsCfg *tls.Config, tlsKey string) *client {
	if c, ok := f.clients.Get(tlsKey); ok {
		return c
	}
	dialer := f.dialer()
	base := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   8,
		ForceAttemptHTTP2:     true,
	}
	// cosign.Transport bounds the manifests and indexes of signatures
	// (cosign.Limits) before the guard's limit, within it: a signature
	// manifest past --max-artifact-bytes is refused as one past the
	// signatures' limit, SignatureUnverified.
	g := &guard{next: cosign.Transport(base), plainLoopback: f.opts.Policy.AllowLoopback, maxManifest: int64(f.opts.MaxArtifactBytes)}
	c := &client{transport: g}
	c.http = &http.Client{
		Transport: g,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			// net/http forwards Authorization to another port of the same
			// host: only the very origin gets the credentials.
			if req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host {
				req.Header.Del("Authorization")
			}
			return nil
		},
	}
	f.clients.Put(tlsKey, c)
	return c
}

// dialer is the dialer of the sources' connections: the address policy,
// or the tests' Control.
func (f *Fetcher) dialer() *net.Dialer {
	d := f.opts.Policy.Dialer(30 * time.Second)
	if f.dialControl != nil {
		d.Control = f.dialControl
	}
	return d
}

// guard refuses plain http but to loopback addresses for local
// development, and bounds the registry's manifests and referrers indexes
// (--max-artifact-bytes).
type guard struct {
	next          http.RoundTripper
	plainLoopback bool
	maxManifest   int64
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !(g.plainLoopback && egress.IsLoopbackHost(req.URL.Hostname())) {
		return nil, failure.New(ReasonSourceInvalid, nil, "plain %s to %s is refused: use https (plain http is allowed to loopback addresses for local development only)",
			req.URL.Scheme, req.URL.Host)
	}
	resp, err := g.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet {
		return resp, err
	}
	what := "the manifest"
	switch {
	case strings.Contains(req.URL.Path, "/manifests/"):
	case strings.Contains(req.URL.Path, "/referrers/"):
		// The listing of an artifact's referrers (its signatures).
		what = "the referrers index"
	default:
		return resp, nil
	}
	if resp.ContentLength > g.maxManifest {
		resp.Body.Close()
		return nil, tooLarge(what, resp.ContentLength, g.maxManifest)
	}
	resp.Body = limitedBody(resp.Body, what, g.maxManifest)
	return resp, nil
}

// tooLarge is the ArtifactTooLarge failure of what, size bytes (-1:
// unknown) against limit, --max-artifact-bytes.
func tooLarge(what string, size, limit int64) *failure.Error {
	if size < 0 {
		return failure.New(ReasonArtifactTooLarge, nil, "%s is larger than the limit of %d bytes (--max-artifact-bytes)", what, limit)
	}
	return failure.New(ReasonArtifactTooLarge, nil, "%s is %d bytes, more than the limit of %d bytes (--max-artifact-bytes)", what, size, limit)
}

// limitedBody is resp's body, failing a read past limit bytes with
// ArtifactTooLarge about what.
func limitedBody(body io.ReadCloser, what string, limit int64) io.ReadCloser {
	return readCloser{Reader: bounded.NewReader(body, limit, func() error { return tooLarge(what, -1, limit) }), Closer: body}
}

// readCloser is a Reader with the Closer of what it reads.
type readCloser struct {
	io.Reader
	io.Closer
}

// errNotOK is a non-2xx answer of a repository.
type errNotOK struct {
	status int
	url    string
}

func (e *errNotOK) Error() string {
	return fmt.Sprintf("%s answered %d %s", e.url, e.status, http.StatusText(e.status))
}
