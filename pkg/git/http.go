package git

import (
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxRedirects bounds the redirects a request follows.
const maxRedirects = 5

// HTTPClient returns the client of Auth.HTTPClient: through base (the
// caller's transport: the address policy, the TLS settings, no proxy), no
// redirect to another host (the credentials go to the URL's host only, and
// go-git would take the new host for the rest of the session:
// KindRedirected), each answer bounded by limits.Bytes (KindTooLarge), and
// the refs of an advertisement (info/refs) by limits.Refs as they arrive
// (KindTooManyRefs).
func HTTPClient(base http.RoundTripper, limits Limits) *http.Client {
	return &http.Client{
		Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := base.RoundTrip(req)
			if err != nil {
				return nil, err
			}
			if limits.Bytes > 0 && resp.ContentLength > limits.Bytes {
				resp.Body.Close()
				return nil, errorf(KindTooLarge, nil, "%s answered %d bytes, more than the limit of %d (--max-git-bytes)", req.URL.Redacted(), resp.ContentLength, limits.Bytes)
			}
			body := bytesLimited(resp.Body, req.URL.Redacted()+": the answer", limits.Bytes)
			if strings.HasSuffix(req.URL.Path, "/info/refs") {
				// The "# service=git-upload-pack" line comes first.
				body = refsCounted(body, req.URL.Redacted(), limits.Refs, 1)
			}
			resp.Body = readCloser{Reader: body, Closer: resp.Body}
			return resp, nil
		}),
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			if req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host {
				return errorf(KindRedirected, nil, "%s redirected to another host (%s), which a Git source does not follow", via[0].URL.Redacted(), req.URL.Host)
			}
			return nil
		},
	}
}

// readCloser is a Reader with the Closer of what it reads.
type readCloser struct {
	io.Reader
	io.Closer
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
