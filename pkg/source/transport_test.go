package source

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/pkg/egress"
)

// The sources' address policy refuses the private ranges unless
// AllowPrivate, and its refusals name the sources' flags, never the
// Clusters'. Its hook is called directly: nothing is dialed.
func TestFetcherAddressPolicy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		address string
		// why is "" when the address is allowed.
		why  string
		flag string
	}{
		{name: "private", address: "10.96.0.1:443", why: egress.WhyPrivate, flag: "--allow-private-sources"},
		{name: "CGNAT", address: "100.64.0.10:443", why: egress.WhyPrivate, flag: "--allow-private-sources"},
		{name: "ULA", address: "[fd12:3456::1]:443", why: egress.WhyPrivate, flag: "--allow-private-sources"},
		{name: "NAT64 of private", address: "[64:ff9b::c0a8:1]:443", why: egress.WhyPrivate, flag: "--allow-private-sources"},
		{name: "loopback", address: "127.0.0.1:443", why: egress.WhyLoopback, flag: "--allow-loopback-sources"},
		{name: "unspecified", address: "0.0.0.0:443", why: egress.WhyUnspecified, flag: "--allow-loopback-sources"},
		{name: "metadata", address: "168.63.129.16:80", why: egress.WhyMetadata},
		{name: "link-local", address: "169.254.169.254:80", why: egress.WhyLinkLocal},
		{name: "public", address: "192.0.2.10:443"},
		{name: "private allowed", opts: Options{AllowPrivate: true}, address: "10.96.0.1:443"},
		{name: "private allowed, ULA", opts: Options{AllowPrivate: true}, address: "[fd12:3456::1]:443"},
		{name: "private allowed, metadata still refused", opts: Options{AllowPrivate: true}, address: "[fd00:ec2::254]:80", why: egress.WhyMetadata},
		{name: "private allowed, --deny-cidr still refuses", address: "10.96.0.1:443", why: egress.WhyDenied,
			opts: Options{AllowPrivate: true, Policy: egress.AddressPolicy{Deny: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}}}},
		{name: "loopback allowed, private refused", opts: Options{Policy: egress.AddressPolicy{AllowLoopback: true}}, address: "192.168.1.1:443",
			why: egress.WhyPrivate, flag: "--allow-private-sources"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := NewFetcher(tc.opts).Limits().Policy.Control("tcp", tc.address, nil)
			if tc.why == "" {
				assert.NoError(t, err)
				return
			}
			var notAllowed *egress.AddressNotAllowedError
			require.ErrorAs(t, err, &notAllowed)
			assert.Equal(t, tc.why, notAllowed.Why)
			assert.Equal(t, tc.flag, notAllowed.Flag)
			assert.NotContains(t, err.Error(), "clusters")
			if tc.flag != "" {
				assert.Contains(t, err.Error(), "(convoy-apiserver "+tc.flag+" allows")
			}
		})
	}
}
