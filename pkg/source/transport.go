package source

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"time"

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
	g := &guard{next: base, plainLoopback: f.opts.Policy.AllowLoopback, maxManifest: int64(f.opts.MaxArtifactBytes)}
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

// guard refuses plain http but to loopback addresses for local
// development, and bounds the registry's manifests.
type guard struct {
	next          http.RoundTripper
	plainLoopback bool
	maxManifest   int64
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !(g.plainLoopback && isLoopback(req.URL.Hostname())) {
		return nil, failure.New(ReasonSourceInvalid, nil, "plain %s to %s is refused: use https (plain http is allowed to loopback addresses for local development only)",
			req.URL.Scheme, req.URL.Host)
	}
	resp, err := g.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/manifests/") {
		return resp, err
	}
	if resp.ContentLength > g.maxManifest {
		resp.Body.Close()
		return nil, tooLarge("the manifest", resp.ContentLength, g.maxManifest)
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: g.maxManifest, what: "the manifest", limit: g.maxManifest}
	return resp, nil
}

// isLoopback reports whether host is a loopback address or localhost.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// tooLarge is the ArtifactTooLarge failure of what, size bytes (-1:
// unknown) against limit, --max-artifact-bytes.
func tooLarge(what string, size, limit int64) *failure.Error {
	return tooLargeFor(what, size, limit, "--max-artifact-bytes")
}

// tooLargeFor is tooLarge against the limit of flag.
func tooLargeFor(what string, size, limit int64, flag string) *failure.Error {
	if size < 0 {
		return failure.New(ReasonArtifactTooLarge, nil, "%s is larger than the limit of %d bytes (%s)", what, limit, flag)
	}
	return failure.New(ReasonArtifactTooLarge, nil, "%s is %d bytes, more than the limit of %d bytes (%s)", what, size, limit, flag)
}

// limitedBody fails a read past left bytes with ArtifactTooLarge.
type limitedBody struct {
	io.ReadCloser
	left  int64
	what  string
	limit int64
	// flag names the limit; "": --max-artifact-bytes.
	flag string
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.tooLarge()
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, b.tooLarge()
	}
	return n, err
}

func (b *limitedBody) tooLarge() *failure.Error {
	if b.flag == "" {
		return tooLarge(b.what, -1, b.limit)
	}
	return tooLargeFor(b.what, -1, b.limit, b.flag)
}

// readAll reads r to its end, failing past limit bytes with the error
// tooLargeErr gives.
func readAll(r io.Reader, limit int64, tooLargeErr func() error) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, tooLargeErr()
	}
	return data, nil
}

// errNotOK is a non-2xx answer of a repository.
type errNotOK struct {
	status int
	url    string
}

func (e *errNotOK) Error() string {
	return fmt.Sprintf("%s answered %d %s", e.url, e.status, http.StatusText(e.status))
}
