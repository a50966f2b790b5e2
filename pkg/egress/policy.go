package egress

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// ReasonAddressNotAllowed is the reason of the *failure.Error of a refused
// connection, whose Err is an *AddressNotAllowedError.
var ReasonAddressNotAllowed = failure.Declare(failure.Reason{
	Name: "AddressNotAllowed", Class: failure.ClassForbidden, Refusal: true,
	Shows:  []failure.Where{failure.InSync, failure.Healthy, failure.Response},
	Means:  "the address policy refused a connection a Release chose (a Cluster's server, a registry, a token service, a redirect, a chart URL): a loopback, link-local, metadata, private or otherwise special address; the message names the address, why, and the development flag that would allow it",
	Action: "use a public address; the flags the message names are for local development only",
})

// Why values of an AddressNotAllowedError.
const (
	// WhyLoopback: the address is a loopback address (127.0.0.0/8, ::1).
	WhyLoopback = "loopback"
	// WhyLinkLocal: the address is a link-local unicast or multicast address
	// (169.254.0.0/16, which holds cloud metadata services, fe80::/10, ...).
	WhyLinkLocal = "link-local"
	// WhyUnspecified: the address is 0.0.0.0 or ::, which reach the local host.
	WhyUnspecified = "unspecified"
	// WhyMetadata: the address is a cloud's metadata service that is not
	// link-local (MetadataAddresses).
	WhyMetadata = "metadata"
	// WhyDenied: the address is in a range the operator denies
	// (--deny-cidr).
	WhyDenied = "denied"
	// WhyPrivate: the address is in a private range (PrivateRanges) and the
	// policy refuses those (AddressPolicy.DenyPrivate).
	WhyPrivate = "private"
	// WhyInvalid: the address is not an IP address and port.
	WhyInvalid = "invalid"
)

// Flags are the flags of convoy-apiserver that would allow what a policy
// refuses, named in its refusals: each caller of a policy has flags of its
// own (a refused registry names the sources' flag, not the Clusters').
type Flags struct {
	// Loopback is the flag that sets AllowLoopback, named in the refusal of
	// a loopback or unspecified address; empty: none is named.
	Loopback string
	// Private is the flag that turns DenyPrivate off, named in the refusal
	// of a private address; empty: none is named.
	Private string
}

// AddressNotAllowedError is the error of a connection that an AddressPolicy
// refuses.
type AddressNotAllowedError struct {
	// Address is the refused "ip:port", after DNS resolution.
	Address string
	// Why is WhyLoopback, WhyLinkLocal, WhyUnspecified, WhyMetadata,
	// WhyDenied, WhyPrivate or WhyInvalid.
	Why string
	// Range is the denied or private range that holds Address (WhyDenied,
	// WhyPrivate).
	Range netip.Prefix
	// Flag is the flag of convoy-apiserver that allows Address, named in
	// the message; empty: none does.
	Flag string
}

// Error says which address is refused, why, and which flag allows it.
func (e *AddressNotAllowedError) Error() string {
	msg := fmt.Sprintf("connecting to %s is not allowed: %s", e.Address, e.describe())
	switch {
	case e.Flag == "":
	case e.Why == WhyPrivate:
		msg += fmt.Sprintf(" (convoy-apiserver %s allows private addresses)", e.Flag)
	default:
		msg += fmt.Sprintf(" (convoy-apiserver %s allows it for local development)", e.Flag)
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
	case WhyMetadata:
		return "it is a cloud metadata service"
	case WhyDenied:
		return fmt.Sprintf("it is in %s, which convoy-apiserver denies (--deny-cidr)", e.Range)
	case WhyPrivate:
		return fmt.Sprintf("it is in the private range %s, which may hold the cluster's own network", e.Range)
	default:
		return fmt.Sprintf("it is a %s address", e.Why)
	}
}

// MetadataAddresses are the cloud metadata services that are not in a
// link-local range (169.254.169.254, the address of most clouds, is), so a
// check of link-local addresses alone lets them through. Their services hand
// out the credentials of the machine convoy-apiserver runs on.
var MetadataAddresses = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),   // AWS EC2 instance metadata over IPv6 (Nitro)
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud ECS metadata
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud Infrastructure metadata (legacy address)
	// Azure's WireServer: the VM agent's channel to the host, which hands
	// out the VM's certificates and extension settings (their secrets with
	// them) to whoever asks from the VM.
	netip.MustParseAddr("168.63.129.16"),
}

// PrivateRanges are the private ranges an AddressPolicy with DenyPrivate
// refuses: they hold a cluster's own network (its nodes, control plane,
// Services and Pods) and an organization's internal services.
var PrivateRanges = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),     // RFC 1918
	netip.MustParsePrefix("172.16.0.0/12"),  // RFC 1918
	netip.MustParsePrefix("192.168.0.0/16"), // RFC 1918
	// Shared address space (RFC 6598, carrier-grade NAT): not RFC 1918,
	// but clusters take their Pod network from it as if it were (EKS with
	// custom networking, GKE with non-RFC 1918 ranges), and overlay VPNs
	// (Tailscale) their nodes' addresses.
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("fc00::/7"), // unique local addresses (RFC 4193)
}

// nat64 is the well-known prefix of NAT64 (RFC 6052): 64:ff9b::a9fe:a9fe
// reaches 169.254.169.254 through a NAT64 gateway, so the IPv4 address it
// holds is checked too.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// nat64Local is the local-use prefix of NAT64 (RFC 8215). An operator may
// take from it a prefix of any length RFC 6052 defines, so where the IPv4
// address sits is not known: the layouts of a /48 (the prefix itself) and
// of a /96 are both judged.
var nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")

// ipv4Compatible is the deprecated IPv4-compatible form (RFC 4291,
// ::a.b.c.d): a stack that still routes it reaches the IPv4 address it
// holds, so that address is checked too.
var ipv4Compatible = netip.MustParsePrefix("::/96")

// AddressPolicy decides which resolved addresses a connection to an address
// a tenant chooses may reach. Its zero value refuses loopback, link-local,
// unspecified and metadata-service addresses (MetadataAddresses), and the
// IPv6 addresses that reach those through NAT64 (the well-known and the
// local-use prefix) or as IPv4-compatible addresses (IPv4-mapped addresses
// are judged as the IPv4 address they are).
type AddressPolicy struct {
	// AllowLoopback allows loopback and unspecified addresses, for target
	// clusters and registries that run on the local host during
	// development.
	AllowLoopback bool
	// DenyPrivate refuses the private ranges too (PrivateRanges), for
	// connections that must not probe the cluster's own network (a
	// source's registry). Clusters' kubeconfigs often point at private
	// addresses, so their policy leaves it off.
	DenyPrivate bool
	// Deny are ranges refused besides (--deny-cidr): the operator's own
	// metadata services, the nodes' or the control plane's networks.
	Deny []netip.Prefix
	// Flags are the flags that allow what the policy refuses, named in its
	// refusals: the caller's own.
	Flags Flags
}

// Control refuses a connection to a not allowed address with a
// *failure.Error of reason ReasonAddressNotAllowed around an
// *AddressNotAllowedError. It is meant for net.Dialer.Control, which calls
// it with the resolved "ip:port" before any packet is sent; the network and
// the raw connection are not used.
func (p AddressPolicy) Control(network, address string, _ syscall.RawConn) error {
	why, denied := p.refusal(address)
	if why == "" {
		return nil
	}
	refused := &AddressNotAllowedError{Address: address, Why: why, Range: denied}
	switch why {
	case WhyLoopback, WhyUnspecified:
		refused.Flag = p.Flags.Loopback
	case WhyPrivate:
		refused.Flag = p.Flags.Private
	}
	return &failure.Error{Reason: ReasonAddressNotAllowed, Message: refused.Error(), Err: refused}
}

// refusal returns the Why of refusing address, or "" when it is allowed,
// and the range for WhyDenied and WhyPrivate.
func (p AddressPolicy) refusal(address string) (string, netip.Prefix) {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return WhyInvalid, netip.Prefix{}
	}
	ip := ap.Addr().WithZone("").Unmap()
	if why, denied := p.refusalOf(ip); why != "" {
		return why, denied
	}
	for _, embedded := range embeddedIPv4(ip) {
		if why, denied := p.refusalOf(embedded); why != "" {
			return why, denied
		}
	}
	return "", netip.Prefix{}
}

// embeddedIPv4 returns the IPv4 addresses that the IPv6 address ip (without
// zone, unmapped) may reach through a translator or an old stack: the one of
// the well-known NAT64 prefix, those of the /48 and /96 layouts of the
// local-use NAT64 prefix, the one of an IPv4-compatible address.
func embeddedIPv4(ip netip.Addr) []netip.Addr {
	if !ip.Is6() {
		return nil
	}
	b := ip.As16()
	last32 := netip.AddrFrom4([4]byte(b[12:]))
	switch {
	case nat64.Contains(ip):
		return []netip.Addr{last32}
	case nat64Local.Contains(ip):
		// RFC 6052, section 2.2: a /48 prefix holds the IPv4 address in
		// bits 48 to 63 and 72 to 87, around the u octet (bits 64 to 71).
		// The layout not in use reads zero bits there, 0.0.0.0, which no
		// gateway forwards to: judged as unspecified, it would refuse the
		// whole prefix, so it is left out.
		var out []netip.Addr
		for _, a := range []netip.Addr{netip.AddrFrom4([4]byte{b[6], b[7], b[9], b[10]}), last32} {
			if !a.IsUnspecified() {
				out = append(out, a)
			}
		}
		return out
	case ipv4Compatible.Contains(ip) && !ip.IsUnspecified() && !ip.IsLoopback():
		return []netip.Addr{last32}
	}
	return nil
}

// refusalOf is refusal of one IP address, without zone, unmapped.
func (p AddressPolicy) refusalOf(ip netip.Addr) (string, netip.Prefix) {
	switch {
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return WhyLinkLocal, netip.Prefix{}
	case ip.IsLoopback() && !p.AllowLoopback:
		return WhyLoopback, netip.Prefix{}
	case ip.IsUnspecified() && !p.AllowLoopback:
		return WhyUnspecified, netip.Prefix{}
	case slices.Contains(MetadataAddresses, ip):
		return WhyMetadata, netip.Prefix{}
	}
	// The operator's ranges come before the private ones: an address in
	// both is refused whatever DenyPrivate, and its message says so.
	for _, r := range p.Deny {
		if r.Contains(ip) {
			return WhyDenied, r
		}
	}
	if p.DenyPrivate {
		for _, r := range PrivateRanges {
			if r.Contains(ip) {
				return WhyPrivate, r
			}
		}
	}
	return "", netip.Prefix{}
}

// Dialer returns a net.Dialer with the timeout that refuses, through
// Control, the addresses p does not allow.
func (p AddressPolicy) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: p.Control}
}

// IsLoopbackHost reports whether host (a URL's, without brackets) is
// localhost or a loopback address: where plain http is allowed for local
// development. The dialer still checks the address it resolves to.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
