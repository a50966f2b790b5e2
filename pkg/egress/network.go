package egress

import (
	"errors"
	"io"
	"net"
	"net/url"
	"syscall"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// NetworkFailure names the network failure in err ("connection refused",
// "timeout", "DNS lookup failed", ...), or returns "" when err is none. The
// compare, the render's discovery and the health reads report a failure it
// names as an unreachable cluster, the sources as an unreachable registry.
func NetworkFailure(err error) string {
	var dnsErr *net.DNSError
	switch {
	case utilnet.IsConnectionRefused(err), errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case utilnet.IsConnectionReset(err), errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &dnsErr):
		return "DNS lookup failed"
	case utilnet.IsTimeout(err), errors.Is(err, syscall.ETIMEDOUT):
		return "timeout"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to host"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), utilnet.IsProbableEOF(err):
		return "connection closed"
	}
	var netErr net.Error
	var urlErr *url.Error
	if errors.As(err, &netErr) || errors.As(err, &urlErr) {
		return "network error"
	}
	return ""
}
