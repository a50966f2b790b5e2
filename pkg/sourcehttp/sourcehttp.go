// Package sourcehttp is the HTTP client of the sources (registries, Helm
// repositories, Git over https, the Sigstore trust root): every connection
// through the address policy's dialer, no proxy of the environment, https
// only, credentials kept to the origin they were given for, and the
// manifests of a registry bounded before they are read.
package sourcehttp

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
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// MaxRedirects bounds the redirects a repository request follows.
const MaxRedirects = 5

// Options are the settings of a Client.
type Options struct {
	// Dialer dials every connection: the address policy's (it refuses what
	// the policy refuses, after DNS resolution, before a packet is sent).
	Dialer *net.Dialer
	// TLS is the TLS configuration; nil: the system roots.
	TLS *tls.Config
	// PlainLoopback allows plain http to loopback addresses, for local
	// development.
	PlainLoopback bool
	// MaxManifest bounds a registry's manifests and referrers indexes
	// (--max-artifact-bytes).
	MaxManifest int64
}

// Client is the HTTP client of one set of options.
type Client struct {
	// Transport is for the registry client, which adds the credentials
	// itself, to the registry's host only.
	Transport http.RoundTripper
	// HTTP is for Helm repositories and the trust root: a redirect to
	// another origin (scheme, host and port) loses the credentials.
	HTTP *http.Client
}

// New returns the Client of o.
func New(o Options) *Client {
	base := &http.Transport{
		Proxy:                 nil,
		DialContext:           o.Dialer.DialContext,
		TLSClientConfig:       o.TLS,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   8,
		ForceAttemptHTTP2:     true,
	}
	// cosign.Transport bounds the manifests and indexes of signatures
	// (cosign.Limits) within the guard's limit: a signature manifest past
	// --max-artifact-bytes is refused as one past the signatures' limit,
	// SignatureUnverified.
	g := &guard{next: cosign.Transport(base), plainLoopback: o.PlainLoopback, maxManifest: o.MaxManifest}
	return &Client{Transport: g, HTTP: &http.Client{
		Transport: g,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= MaxRedirects {
				return fmt.Errorf("more than %d redirects", MaxRedirects)
			}
			// net/http forwards Authorization to another port of the same
			// host: only the very origin gets the credentials.
			if req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host {
				req.Header.Del("Authorization")
			}
			return nil
		},
	}}
}

// guard refuses plain http but to loopback addresses for local
// development, and bounds the registry's manifests and referrers indexes.
type guard struct {
	next          http.RoundTripper
	plainLoopback bool
	maxManifest   int64
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !(g.plainLoopback && egress.IsLoopbackHost(req.URL.Hostname())) {
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "plain %s to %s is refused: use https (plain http is allowed to loopback addresses for local development only)",
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
		return nil, TooLarge(what, resp.ContentLength, g.maxManifest)
	}
	resp.Body = LimitedBody(resp.Body, what, g.maxManifest)
	return resp, nil
}

// TooLarge is the ArtifactTooLarge failure of what, size bytes (-1:
// unknown) against limit, --max-artifact-bytes.
func TooLarge(what string, size, limit int64) *failure.Error {
	if size < 0 {
		return failure.New(sourcefailure.ReasonArtifactTooLarge, nil, "%s is larger than the limit of %d bytes (--max-artifact-bytes)", what, limit)
	}
	return failure.New(sourcefailure.ReasonArtifactTooLarge, nil, "%s is %d bytes, more than the limit of %d bytes (--max-artifact-bytes)", what, size, limit)
}

// LimitedBody is body, failing a read past limit bytes with
// ArtifactTooLarge about what.
func LimitedBody(body io.ReadCloser, what string, limit int64) io.ReadCloser {
	return readCloser{Reader: bounded.NewReader(body, limit, func() error { return TooLarge(what, -1, limit) }), Closer: body}
}

// readCloser is a Reader with the Closer of what it reads.
type readCloser struct {
	io.Reader
	io.Closer
}

// NotOKError is a non-2xx answer of a repository.
type NotOKError struct {
	Status int
	URL    string
}

func (e *NotOKError) Error() string {
	return fmt.Sprintf("%s answered %d %s", e.URL, e.Status, http.StatusText(e.Status))
}
