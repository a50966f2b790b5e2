package cosign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/kumodo/convoy-apiserver/pkg/bounded"
)

// Transport returns next bounding what Verify and VerifyKeyless read of
// manifests: the answer to one of their requests for a manifest (a path
// with /manifests/) or a referrers index (/referrers/) is refused past
// their Limits.MaxBytes by its Content-Length, before its body is read,
// and cut at the first byte past it while it is read. Every other request
// goes through as it is. go-containerregistry reads a manifest whole (up to
// 100 MiB) before its caller sees its size, so the Puller given to Verify
// must be built on this transport (remote.WithTransport); Verify refuses
// to go on with one that is not (an error of no Kind).
func Transport(next http.RoundTripper) http.RoundTripper {
	return &boundTransport{next: next}
}

// boundKey is the context key of a run's bound.
type boundKey struct{}

// bound is what the requests of a run carry in their context: the limit of
// a manifest, and whether Transport saw one of them.
type bound struct {
	limit int64
	seen  atomic.Bool
}

func withBound(ctx context.Context, b *bound) context.Context {
	return context.WithValue(ctx, boundKey{}, b)
}

type boundTransport struct {
	next http.RoundTripper
}

func (t *boundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	b, ok := req.Context().Value(boundKey{}).(*bound)
	if !ok {
		return t.next.RoundTrip(req)
	}
	b.seen.Store(true)
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode/100 != 2 ||
		!strings.Contains(req.URL.Path, "/manifests/") && !strings.Contains(req.URL.Path, "/referrers/") {
		return resp, err
	}
	if resp.ContentLength > b.limit {
		resp.Body.Close()
		return nil, &tooLargeError{size: resp.ContentLength, limit: b.limit}
	}
	body := resp.Body
	resp.Body = readCloser{
		Reader: bounded.NewReader(body, b.limit, func() error { return &tooLargeError{size: -1, limit: b.limit} }),
		Closer: body,
	}
	return resp, nil
}

// tooLargeError is Transport's refusal of a manifest or a referrers index
// past limit: size is its Content-Length, -1 when it was cut as it was
// read.
type tooLargeError struct {
	size, limit int64
}

func (e *tooLargeError) Error() string {
	if e.size < 0 {
		return fmt.Sprintf("more than the limit of %d bytes", e.limit)
	}
	return fmt.Sprintf("%d bytes, more than the limit of %d bytes", e.size, e.limit)
}

// tooLarge is the KindTooLarge *Error of what when err is Transport's
// refusal, nil otherwise.
func tooLarge(err error, what string) *Error {
	var e *tooLargeError
	switch {
	case !errors.As(err, &e):
		return nil
	case e.size < 0:
		return errorf(KindTooLarge, nil, "%s is more than the limit of %d bytes (cut at byte %d as it was read, before it was read whole)", what, e.limit, e.limit+1)
	}
	return errorf(KindTooLarge, nil, "%s is %d bytes, more than the limit of %d bytes (its Content-Length: refused before it was read)", what, e.size, e.limit)
}

// readCloser is a Reader with the Closer of what it reads.
type readCloser struct {
	io.Reader
	io.Closer
}
