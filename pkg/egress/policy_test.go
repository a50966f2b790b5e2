package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// TestAddressPolicyControl calls Control directly: no test dials a
// non-loopback address, not even one the policy refuses.
func TestAddressPolicyControl(t *testing.T) {
	for _, tc := range []struct {
		address string
		// strict is the Why of AddressPolicy{}, "" when allowed.
		strict string
		// loose is the Why of AddressPolicy{AllowLoopback: true}.
		loose string
	}{
		{address: "169.254.169.254:80", strict: WhyLinkLocal, loose: WhyLinkLocal},
		{address: "169.254.0.1:443", strict: WhyLinkLocal, loose: WhyLinkLocal},
		{address: "[fe80::1]:443", strict: WhyLinkLocal, loose: WhyLinkLocal},
		{address: "[fe80::1%eth0]:443", strict: WhyLinkLocal, loose: WhyLinkLocal},
		{address: "224.0.0.1:443", strict: WhyLinkLocal, loose: WhyLinkLocal},
		{address: "[ff02::1]:443", strict: WhyLinkLocal, loose: WhyLinkLocal},
		{address: "127.0.0.1:443", strict: WhyLoopback},
		{address: "127.1.2.3:6443", strict: WhyLoopback},
		{address: "[::1]:443", strict: WhyLoopback},
		{address: "[::ffff:127.0.0.1]:443", strict: WhyLoopback},
		{address: "[::ffff:169.254.169.254]:80", strict: WhyLinkLocal, loose: WhyLinkLocal},
		{address: "[::ffff:a9fe:a9fe]:80", strict: WhyLinkLocal, loose: WhyLinkLocal},
		{address: "[fd00:ec2::254]:80", strict: WhyMetadata, loose: WhyMetadata},
		{address: "100.100.100.200:80", strict: WhyMetadata, loose: WhyMetadata},
		{address: "192.0.0.192:80", strict: WhyMetadata, loose: WhyMetadata},
		{address: "[::ffff:100.100.100.200]:80", strict: WhyMetadata, loose: WhyMetadata},
		{address: "[64:ff9b::a9fe:a9fe]:80", strict: WhyLinkLocal, loose: WhyLinkLocal},
		{address: "[64:ff9b::7f00:1]:443", strict: WhyLoopback},
		{address: "[64:ff9b::6464:64c8]:80", strict: WhyMetadata, loose: WhyMetadata},
		{address: "[64:ff9b::c000:20a]:443"},
		// Azure's WireServer, IPv4 and IPv4-mapped.
		{address: "168.63.129.16:80", strict: WhyMetadata, loose: WhyMetadata},
		{address: "[::ffff:a83f:8110]:32526", strict: WhyMetadata, loose: WhyMetadata},
		// IPv4-compatible addresses (::a.b.c.d) are judged as the IPv4
		// address they hold; :: and ::1 are themselves.
		{address: "[::a9fe:a9fe]:80", strict: WhyLinkLocal, loose: WhyLinkLocal},
		{address: "[::169.254.169.254]:80", strict: WhyLinkLocal, loose: WhyLinkLocal},
		{address: "[::a83f:8110]:80", strict: WhyMetadata, loose: WhyMetadata},
		{address: "[::6464:64c8]:80", strict: WhyMetadata, loose: WhyMetadata},
		{address: "[::7f00:1]:443", strict: WhyLoopback},
		{address: "[::c000:20a]:443"},
		{address: "[::2]:443"},
		// The local-use NAT64 prefix: the IPv4 address of the /96 layout
		// (the last 32 bits, whatever the 48 bits after the prefix)...
		{address: "[64:ff9b:1::a9fe:a9fe]:80", strict: WhyLinkLocal, loose: WhyLinkLocal},
		{address: "[64:ff9b:1:ab:cd::a9fe:a9fe]:80", strict: WhyLinkLocal, loose: WhyLinkLocal},
		{address: "[64:ff9b:1::a83f:8110]:80", strict: WhyMetadata, loose: WhyMetadata},
		{address: "[64:ff9b:1::7f00:1]:443", strict: WhyLoopback},
		// ... and of the /48 layout (bits 48-63 and 72-87).
		{address: "[64:ff9b:1:a9fe:a9:fe00::]:80", strict: WhyLinkLocal, loose: WhyLinkLocal},
		{address: "[64:ff9b:1:a83f:81:1000::]:80", strict: WhyMetadata, loose: WhyMetadata},
		{address: "[64:ff9b:1:7f00:0:100::]:443", strict: WhyLoopback},
		// Elsewhere the prefix is allowed: the zero bits of the layout not
		// in use are not taken for 0.0.0.0.
		{address: "[64:ff9b:1::c000:20a]:443"},
		{address: "[64:ff9b:1:c000:2:a00::]:443"},
		{address: "[64:ff9b:1::]:443"},
		{address: "[fd00:ec2::253]:53"},
		{address: "100.100.100.201:80"},
		{address: "0.0.0.0:443", strict: WhyUnspecified},
		{address: "[::]:443", strict: WhyUnspecified},
		{address: "[::ffff:0.0.0.0]:443", strict: WhyUnspecified},
		{address: "10.0.0.1:443"},
		{address: "192.0.2.10:443"},
		{address: "[2001:db8::1]:443"},
		{address: "[::ffff:192.0.2.10]:443"},
		{address: "not-an-ip:1", strict: WhyInvalid, loose: WhyInvalid},
		{address: "10.0.0.1", strict: WhyInvalid, loose: WhyInvalid},
		{address: "", strict: WhyInvalid, loose: WhyInvalid},
	} {
		t.Run(tc.address, func(t *testing.T) {
			for _, p := range []struct {
				policy AddressPolicy
				why    string
			}{
				{policy: AddressPolicy{}, why: tc.strict},
				{policy: AddressPolicy{AllowLoopback: true}, why: tc.loose},
			} {
				err := p.policy.Control("tcp", tc.address, nil)
				if p.why == "" {
					assert.NoError(t, err, "%+v", p.policy)
					continue
				}
				var notAllowed *AddressNotAllowedError
				if assert.True(t, errors.As(err, &notAllowed), "%+v: %v", p.policy, err) {
					assert.Equal(t, p.why, notAllowed.Why, "%+v", p.policy)
					assert.Equal(t, tc.address, notAllowed.Address)
					assert.Equal(t, ReasonAddressNotAllowed, failure.ReasonOf(err))
					assert.Equal(t, notAllowed.Error(), err.Error())
				}
			}
		})
	}
}

// The message names the flag of the policy that refused, and no other: a
// Cluster's, a source's, or none for a policy that names none.
func TestAddressNotAllowedErrorMessage(t *testing.T) {
	clusters := AddressPolicy{Flags: Flags{Loopback: "--allow-loopback-clusters"}}
	sources := AddressPolicy{DenyPrivate: true, Flags: Flags{Loopback: "--allow-loopback-sources", Private: "--allow-private-sources"}}
	for _, tc := range []struct {
		policy  AddressPolicy
		address string
		want    string
	}{
		{
			address: "169.254.169.254:443",
			want:    "connecting to 169.254.169.254:443 is not allowed: it is a link-local address",
		},
		{
			address: "127.0.0.1:443",
			want:    "connecting to 127.0.0.1:443 is not allowed: it is a loopback address",
		},
		{
			policy:  clusters,
			address: "127.0.0.1:443",
			want:    "connecting to 127.0.0.1:443 is not allowed: it is a loopback address (convoy-apiserver --allow-loopback-clusters allows it for local development)",
		},
		{
			policy:  clusters,
			address: "0.0.0.0:443",
			want:    "connecting to 0.0.0.0:443 is not allowed: it is an unspecified address, which reaches the local host (convoy-apiserver --allow-loopback-clusters allows it for local development)",
		},
		{
			address: "not-an-ip:1",
			want:    "connecting to not-an-ip:1 is not allowed: it is not an IP address and port",
		},
		{
			address: "168.63.129.16:80",
			want:    "connecting to 168.63.129.16:80 is not allowed: it is a cloud metadata service",
		},
		{
			policy:  sources,
			address: "127.0.0.1:443",
			want:    "connecting to 127.0.0.1:443 is not allowed: it is a loopback address (convoy-apiserver --allow-loopback-sources allows it for local development)",
		},
		{
			policy:  sources,
			address: "[::]:443",
			want:    "connecting to [::]:443 is not allowed: it is an unspecified address, which reaches the local host (convoy-apiserver --allow-loopback-sources allows it for local development)",
		},
		{
			policy:  sources,
			address: "10.96.0.1:443",
			want:    "connecting to 10.96.0.1:443 is not allowed: it is in the private range 10.0.0.0/8, which may hold the cluster's own network (convoy-apiserver --allow-private-sources allows private addresses)",
		},
		{
			policy:  sources,
			address: "169.254.169.254:80",
			want:    "connecting to 169.254.169.254:80 is not allowed: it is a link-local address",
		},
	} {
		t.Run(tc.policy.Flags.Loopback+" "+tc.address, func(t *testing.T) {
			err := tc.policy.Control("tcp", tc.address, nil)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// DenyPrivate refuses the private ranges, IPv4 and IPv6, however written,
// after the metadata services and the operator's ranges; without it they
// are allowed.
func TestAddressPolicyDenyPrivate(t *testing.T) {
	p := AddressPolicy{DenyPrivate: true}
	for _, tc := range []struct {
		address string
		why     string
		// rng is the range of the refusal, for WhyPrivate and WhyDenied.
		rng string
	}{
		{address: "10.1.2.3:443", why: WhyPrivate, rng: "10.0.0.0/8"},
		{address: "172.16.0.1:443", why: WhyPrivate, rng: "172.16.0.0/12"},
		{address: "172.31.255.254:443", why: WhyPrivate, rng: "172.16.0.0/12"},
		{address: "192.168.1.1:443", why: WhyPrivate, rng: "192.168.0.0/16"},
		{address: "100.64.0.1:443", why: WhyPrivate, rng: "100.64.0.0/10"},
		{address: "100.127.255.254:443", why: WhyPrivate, rng: "100.64.0.0/10"},
		{address: "[fd12:3456::1]:443", why: WhyPrivate, rng: "fc00::/7"},
		{address: "[fc00::1]:443", why: WhyPrivate, rng: "fc00::/7"},
		{address: "[::ffff:10.0.0.1]:443", why: WhyPrivate, rng: "10.0.0.0/8"},
		{address: "[64:ff9b::c0a8:101]:443", why: WhyPrivate, rng: "192.168.0.0/16"},
		{address: "[64:ff9b:1::a00:1]:443", why: WhyPrivate, rng: "10.0.0.0/8"},
		{address: "[::a00:1]:443", why: WhyPrivate, rng: "10.0.0.0/8"},
		{address: "100.100.100.200:80", why: WhyMetadata},
		{address: "[fd00:ec2::254]:80", why: WhyMetadata},
		{address: "172.32.0.1:443"},
		{address: "100.128.0.1:443"},
		{address: "11.0.0.1:443"},
		{address: "192.0.2.10:443"},
		{address: "[2001:db8::1]:443"},
		{address: "[fe00::1]:443"},
	} {
		t.Run(tc.address, func(t *testing.T) {
			if tc.why != WhyMetadata {
				assert.NoError(t, AddressPolicy{}.Control("tcp", tc.address, nil), "allowed without DenyPrivate")
			}
			err := p.Control("tcp", tc.address, nil)
			if tc.why == "" {
				assert.NoError(t, err)
				return
			}
			var notAllowed *AddressNotAllowedError
			require.ErrorAs(t, err, &notAllowed)
			assert.Equal(t, tc.why, notAllowed.Why)
			if tc.rng != "" {
				assert.Equal(t, tc.rng, notAllowed.Range.String())
			}
		})
	}
	// An operator's range comes first: its refusal names --deny-cidr,
	// which --allow-private-sources would not lift.
	denied := AddressPolicy{DenyPrivate: true, Flags: Flags{Private: "--allow-private-sources"}, Deny: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}}
	err := denied.Control("tcp", "10.96.0.1:443", nil)
	var notAllowed *AddressNotAllowedError
	require.ErrorAs(t, err, &notAllowed)
	assert.Equal(t, WhyDenied, notAllowed.Why)
	assert.NotContains(t, err.Error(), "--allow-private-sources")
}

// The operator's ranges are refused too, IPv4 and IPv6, and the message
// names the range and the flag.
func TestAddressPolicyDeny(t *testing.T) {
	p := AddressPolicy{Deny: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd12:3456::/32")}}
	for address, want := range map[string]string{
		"10.1.2.3:443":          "10.0.0.0/8",
		"[::ffff:10.9.9.9]:443": "10.0.0.0/8",
		"[fd12:3456::1]:443":    "fd12:3456::/32",
		"[64:ff9b::a01:203]:80": "10.0.0.0/8",
		"192.0.2.10:443":        "",
		"[fd12:3457::1]:443":    "",
	} {
		err := p.Control("tcp", address, nil)
		if want == "" {
			assert.NoError(t, err, address)
			continue
		}
		var notAllowed *AddressNotAllowedError
		if assert.ErrorAs(t, err, &notAllowed, address) {
			assert.Equal(t, WhyDenied, notAllowed.Why)
			assert.Equal(t, want, notAllowed.Range.String())
			assert.Contains(t, err.Error(), "it is in "+want+", which convoy-apiserver denies (--deny-cidr)")
		}
	}
}

func TestAddressPolicyDialer(t *testing.T) {
	d := AddressPolicy{}.Dialer(3 * time.Second)
	assert.Equal(t, 3*time.Second, d.Timeout)
	assert.Equal(t, 30*time.Second, d.KeepAlive)
	require.NotNil(t, d.Control)
	var notAllowed *AddressNotAllowedError
	require.ErrorAs(t, d.Control("tcp", "169.254.169.254:80", nil), &notAllowed)
}

// TestAddressPolicyDialLoopback really dials, but only a listener on
// 127.0.0.1: the strict policy refuses before a connection reaches it, the
// loose one connects.
func TestAddressPolicyDialLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	conn, err := AddressPolicy{}.Dialer(time.Second).DialContext(ctx, "tcp", addr)
	if conn != nil {
		conn.Close()
	}
	var notAllowed *AddressNotAllowedError
	require.ErrorAs(t, err, &notAllowed)
	assert.Equal(t, WhyLoopback, notAllowed.Why)
	assert.Equal(t, addr, notAllowed.Address)

	require.NoError(t, ln.(*net.TCPListener).SetDeadline(time.Now().Add(300*time.Millisecond)))
	accepted, err := ln.Accept()
	if accepted != nil {
		accepted.Close()
	}
	var netErr net.Error
	require.ErrorAs(t, err, &netErr, "the refused dial reached the listener")
	assert.True(t, netErr.Timeout(), "accept: %v", err)

	require.NoError(t, ln.(*net.TCPListener).SetDeadline(time.Now().Add(5*time.Second)))
	conn, err = AddressPolicy{AllowLoopback: true}.Dialer(time.Second).DialContext(ctx, "tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	accepted, err = ln.Accept()
	require.NoError(t, err)
	accepted.Close()
}
