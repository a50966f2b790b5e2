package cluster

import (
	"fmt"
	"io"
	"net/http"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// ReasonResponseTooLarge is the reason of the *failure.Error of an answer
// of a target cluster's API server larger than Options.MaxResponseBytes
// (--max-target-response-bytes): its declared Content-Length, or the bytes
// read of its body.
var ReasonResponseTooLarge = failure.Declare(failure.Reason{
	Name: "ResponseTooLarge", Class: failure.ClassOverLimit, Shows: everywhere, Refusal: true,
	Means:  "an answer of the target cluster's API server passed --max-target-response-bytes (its Content-Length, or the bytes read of its body)",
	Action: "find what makes the answer so large (the message names the request); raise --max-target-response-bytes only for a cluster you trust",
})

// DefaultMaxResponseBytes is the default of Options.MaxResponseBytes: no
// discovery document or object of a kube-apiserver comes near it (etcd
// holds objects of at most 1.5 MiB), and a page of a LIST that does falls
// back to reads one by one.
const DefaultMaxResponseBytes = 64 << 20

// maxResponseBytesFlag is the flag that sets Options.MaxResponseBytes, for
// messages.
const maxResponseBytesFlag = "--max-target-response-bytes"

// limitingTransport bounds the answers of one cluster's API server, which
// client-go reads whole before it decodes them (a tenant's kubeconfig may
// point at a server of its own): a Content-Length over limit is refused
// before the body is read, a body fails past limit bytes, with
// ReasonResponseTooLarge, and the connection is closed. It is the outermost
// RoundTripper: it counts what the caller reads, gzip inflated
// (docs/contributors/internals.md, "Target clusters"). Requests pass unchanged.
type limitingTransport struct {
	cluster string
	limit   int64
	next    http.RoundTripper
}

func (t limitingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	if resp.ContentLength > t.limit {
		// Not a RoundTrip error: net/http would wrap it in a *url.Error,
		// which egress.NetworkFailure takes for an unreachable cluster. The body
		// fails on its first read instead, as a body over the limit does.
		_ = resp.Body.Close()
		resp.Body = &limitedBody{err: t.tooLarge(req, fmt.Sprintf("declares %d bytes (Content-Length), more than", resp.ContentLength))}
		return resp, nil
	}
	resp.Body = &limitedBody{body: resp.Body, remaining: t.limit, over: func() error {
		return t.tooLarge(req, "is larger than")
	}}
	return resp, nil
}

// tooLarge is the error of an answer to req over the limit; what says how
// it is, before the limit.
func (t limitingTransport) tooLarge(req *http.Request, what string) *failure.Error {
	targetResponsesTooLarge.WithLabelValues(t.cluster, operation(req)).Inc()
	countRefusal(ReasonResponseTooLarge)
	server := "the API server of the local cluster"
	if t.cluster != "" {
		server = "the API server of " + clusterKey(t.cluster).Describe()
	}
	return &failure.Error{Reason: ReasonResponseTooLarge, Message: fmt.Sprintf("the answer of %s to %s %s %s %d bytes, the limit of %s",
		server, req.Method, req.URL.Path, what, t.limit, maxResponseBytesFlag)}
}

// isTooLarge reports whether err is, or wraps, an answer over the limit.
func isTooLarge(err error) bool {
	_, ok := failure.Find(err, ReasonResponseTooLarge)
	return ok
}

// limitedBody is a response body that fails once more than remaining bytes
// are read from it: the read that would pass the limit returns what is
// within it and the error of over, and every read after it that error. The
// body is closed at that point. A limitedBody without body fails at once
// with err. Like any response body, it is read by one goroutine at a time;
// Close may be called from another one, to end a read that waits.
type limitedBody struct {
	body      io.ReadCloser
	remaining int64
	over      func() error
	err       error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	// One byte more than what is left tells a body of exactly the limit
	// from a larger one.
	if int64(len(p)) > b.remaining+1 {
		p = p[:b.remaining+1]
	}
	n, err := b.body.Read(p)
	if int64(n) <= b.remaining {
		b.remaining -= int64(n)
		return n, err
	}
	n = int(b.remaining)
	b.remaining = 0
	b.err = b.over()
	_ = b.body.Close()
	return n, b.err
}

// Close closes the body; closing it again, after a read over the limit
// closed it, does no harm (net/http's bodies allow it).
func (b *limitedBody) Close() error {
	if b.body == nil {
		return nil
	}
	return b.body.Close()
}
