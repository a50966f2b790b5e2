package egress

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// FuzzAddressPolicy: the guard refuses exactly the addresses the test's own
// account of them (refusedByOracle) refuses, whatever the text of the
// address: loopback, link-local, unspecified, metadata and denied ones, and
// the IPv6 addresses that reach one of those through an IPv4 address they
// hold; it refuses what is no address, and lets the rest through.
func FuzzAddressPolicy(f *testing.F) {
	for _, a := range []string{
		"127.0.0.1:443", "[::ffff:127.0.0.1]:1", "169.254.169.254:80", "[fe80::1%eth0]:443", "10.0.0.1:6443", "x",
		"[64:ff9b::a9fe:a9fe]:80", "[fd00:ec2::254]:80", "10.1.2.3:443", "100.100.100.200:80", "192.0.0.192:80",
		"168.63.129.16:80", "[::a9fe:a9fe]:80", "[::7f00:1]:443", "[64:ff9b:1::a9fe:a9fe]:80", "[64:ff9b:1:a9fe:a9:fe00::]:80",
		"[64:ff9b:1::]:80", "[64:ff9b::]:80", "[::]:443", "0.0.0.0:443", "[::1]:443", "[ff02::1]:80", "[ff32::1]:80",
		"224.0.0.251:5353", "203.0.113.7:443", "[2001:db8::1]:443", "[64:ff9b::cb00:7107]:443",
		"172.16.0.1:443", "172.31.255.255:443", "172.32.0.1:443", "192.168.1.1:443", "100.64.0.1:443", "100.128.0.1:443",
		"[fd12:3456::1]:443", "[fc00::1]:443", "[fe00::1]:443", "[64:ff9b::c0a8:101]:443", "[::ffff:192.168.1.1]:443",
	} {
		for _, allowLoopback := range []bool{false, true} {
			for _, denyPrivate := range []bool{false, true} {
				f.Add(a, allowLoopback, denyPrivate)
			}
		}
	}
	denied := netip.MustParsePrefix("10.0.0.0/8")
	f.Fuzz(func(t *testing.T, address string, allowLoopback, denyPrivate bool) {
		policy := AddressPolicy{AllowLoopback: allowLoopback, DenyPrivate: denyPrivate, Deny: []netip.Prefix{denied}}
		err := policy.Control("tcp", address, nil)
		why := refusedByOracle(address, allowLoopback, denyPrivate, denied)
		if why == "" {
			require.NoError(t, err, "%q (loopback allowed: %t, private denied: %t) was refused, but it is none of the addresses to refuse", address, allowLoopback, denyPrivate)
			return
		}
		require.Error(t, err, "%q (loopback allowed: %t, private denied: %t) was allowed, but it is %s", address, allowLoopback, denyPrivate, why)
		fe, ok := failure.As(err)
		require.True(t, ok, "not a failure.Error: %v", err)
		require.Equal(t, ReasonAddressNotAllowed, fe.Reason)
	})
}

// The oracle's own lists, from the ranges' RFCs and the clouds' documents
// rather than from policy.go, so that a change to the policy's lists shows
// here.
var (
	// oracleMetadata are the clouds' metadata services.
	oracleMetadata = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // most clouds (link-local as well)
		netip.MustParseAddr("fd00:ec2::254"),   // AWS EC2 over IPv6
		netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
		netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud (legacy)
	}
	// oracleWireServer is Azure's WireServer.
	oracleWireServer = netip.MustParseAddr("168.63.129.16")
	// oracleLinkLocal are the link-local unicast ranges and IPv4's
	// link-local multicast one; IPv6's is a scope (see refusedOne).
	oracleLinkLocal = []netip.Prefix{
		netip.MustParsePrefix("169.254.0.0/16"), // RFC 3927
		netip.MustParsePrefix("fe80::/10"),      // RFC 4291
		netip.MustParsePrefix("224.0.0.0/24"),   // RFC 5771, local network control block
	}
	// oracleLocalHost are the loopback ranges and the unspecified
	// addresses, which reach the local host.
	oracleLocalHost = []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("0.0.0.0/32"), netip.MustParsePrefix("::/128"),
	}
	// The prefixes of IPv6 addresses that hold an IPv4 address.
	oracleNAT64      = netip.MustParsePrefix("64:ff9b::/96")   // RFC 6052, well-known
	oracleNAT64Local = netip.MustParsePrefix("64:ff9b:1::/48") // RFC 8215, local use
	oracleCompatible = netip.MustParsePrefix("::/96")          // RFC 4291, deprecated
	// oraclePrivate are the private ranges: RFC 1918's, the shared address
	// space of carrier-grade NAT (RFC 6598) and IPv6's unique local
	// addresses (RFC 4193).
	oraclePrivate = []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("fc00::/7"),
	}
)

// refusedByOracle says why an address policy with allowLoopback,
// denyPrivate and the denied range must refuse the "ip:port" address, or ""
// when it must allow it. An IPv6 address is judged as itself and as each IPv4 address it holds
// (IPv4-mapped: as that address only).
func refusedByOracle(address string, allowLoopback, denyPrivate bool, denied netip.Prefix) string {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return "no address"
	}
	b := ap.Addr().As16()
	ip := netip.AddrFrom16(b).Unmap()
	judged := []netip.Addr{ip}
	ipv4 := func(a, b, c, d byte) netip.Addr { return netip.AddrFrom4([4]byte{a, b, c, d}) }
	switch {
	case ip.Is4():
	case oracleNAT64.Contains(ip):
		judged = append(judged, ipv4(b[12], b[13], b[14], b[15]))
	case oracleNAT64Local.Contains(ip):
		// The prefix taken from it may be a /96 (the IPv4 address in the
		// last 32 bits) or the /48 itself (bits 48 to 63 and 72 to 87,
		// RFC 6052 section 2.2); 0.0.0.0 is where a layout not in use
		// reads, not an address a gateway forwards to.
		for _, a := range []netip.Addr{ipv4(b[12], b[13], b[14], b[15]), ipv4(b[6], b[7], b[9], b[10])} {
			if a != ipv4(0, 0, 0, 0) {
				judged = append(judged, a)
			}
		}
	case oracleCompatible.Contains(ip):
		judged = append(judged, ipv4(b[12], b[13], b[14], b[15]))
	}
	for _, a := range judged {
		if why := refusedOne(a, allowLoopback, denyPrivate, denied); why != "" {
			if a != ip {
				why += " " + a.String() + " inside"
			}
			return why
		}
	}
	return ""
}

// refusedOne is refusedByOracle for one address, unmapped.
func refusedOne(ip netip.Addr, allowLoopback, denyPrivate bool, denied netip.Prefix) string {
	b := ip.As16()
	switch {
	case slices.ContainsFunc(oracleLinkLocal, func(p netip.Prefix) bool { return p.Contains(ip) }),
		// IPv6 multicast of link-local scope (RFC 4291 section 2.7: the
		// scope is the low 4 bits of the second byte, whatever the flags).
		ip.Is6() && b[0] == 0xff && b[1]&0x0f == 2:
		return "link-local"
	case !allowLoopback && slices.ContainsFunc(oracleLocalHost, func(p netip.Prefix) bool { return p.Contains(ip) }):
		return "the local host"
	case slices.Contains(oracleMetadata, ip), ip == oracleWireServer:
		return "a metadata service"
	case denied.Contains(ip):
		return "denied"
	case denyPrivate && slices.ContainsFunc(oraclePrivate, func(p netip.Prefix) bool { return p.Contains(ip) }):
		return "private"
	}
	return ""
}
