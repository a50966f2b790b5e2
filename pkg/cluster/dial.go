package cluster

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// ReasonAddressNotAllowed is the reason of the *failure.Error of a refused
// connection, whose Err is an *AddressNotAllowedError.
const ReasonAddressNotAllowed = "AddressNotAllowed"

// Why values of an AddressNotAllowedError.
const (
	// WhyLoopback: the address is a loopback address (127.0.0.0/8, ::1).
	WhyLoopback = "loopback"
	// WhyLinkLocal: the address is a link-local unicast or multicast address
	// (169.254.0.0/16, which holds cloud metadata services, fe80::/10, ...).
	WhyLinkLocal = "link-local"
	// WhyUnspecified: the address is 0.0.0.0 or ::, which reach the local host.
	WhyUnspecified = "unspecified"
	// WhyInvalid: the address is not an IP address and port.
	WhyInvalid = "invalid"
)

// allowLoopbackHint tells how to allow the addresses that AllowLoopback
// allows.
const allowLoopbackHint = " (convoy-apiserver --allow-loopback-clusters allows it for local development)"

// AddressNotAllowedError is the error of a connection that an AddressPolicy
// refuses.
type AddressNotAllowedError struct {
	// Address is the refused "ip:port", after DNS resolution.
	Address string
	// Why is WhyLoopback, WhyLinkLocal, WhyUnspecified or WhyInvalid.
	Why string
}

// Error says which address is refused and why.
func (e *AddressNotAllowedError) Error() string {
	msg := fmt.Sprintf("connecting to %s is not allowed: %s", e.Address, e.describe())
	if e.Why == WhyLoopback || e.Why == WhyUnspecified {
		msg += allowLoopbackHint
	}
	return msg
}

// describe is the reason of e as the end of a sentence.
func (e *AddressNotAllowedError) describe() string {
	switch e.Why {
	case WhyUnspecified:
		return "it is an unspecified address, which reaches the local host"
	case WhyInvalid:
		return "it is not an IP address and port"
	default:
		return fmt.Sprintf("it is a %s address", e.Why)
	}
}

// AddressPolicy decides which resolved addresses a connection to a target
// cluster may reach. Its zero value refuses loopback, link-local and
// unspecified addresses.
type AddressPolicy struct {
	// AllowLoopback allows loopback and unspecified addresses, for target
	// clusters that run on the local host during development.
	AllowLoopback bool
}

// Control refuses a connection to a not allowed address with a
// *failure.Error of reason ReasonAddressNotAllowed around an
// *AddressNotAllowedError. It is meant for net.Dialer.Control, which calls
// it with the resolved "ip:port" before any packet is sent; the network and
// the raw connection are not used.
func (p AddressPolicy) Control(network, address string, _ syscall.RawConn) error {
	why := p.refusal(address)
	if why == "" {
		return nil
	}
	refused := &AddressNotAllowedError{Address: address, Why: why}
	return &failure.Error{Reason: ReasonAddressNotAllowed, Message: refused.Error(), Err: refused}
}

// refusal returns the Why of refusing address, or "" when it is allowed.
func (p AddressPolicy) refusal(address string) string {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return WhyInvalid
	}
	ip := ap.Addr().Unmap()
	switch {
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return WhyLinkLocal
	case ip.IsLoopback() && !p.AllowLoopback:
		return WhyLoopback
	case ip.IsUnspecified() && !p.AllowLoopback:
		return WhyUnspecified
	}
	return ""
}

// Dialer returns a net.Dialer with the timeout that refuses, through
// Control, the addresses p does not allow.
func (p AddressPolicy) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: p.Control}
}
