package cluster

import (
	"net/netip"
	"slices"
	"testing"
)

// FuzzKubeconfig: any bytes in a Cluster's Secret give a config or an error,
// never a panic, and a config only from inline data: no file or program.
func FuzzKubeconfig(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: \"https://10.0.0.1:6443\"}}]\nusers: [{name: u, user: {token: t}}]\n"))
	f.Add([]byte("apiVersion: v1\nkind: Config\ncurrent-context: \"\"\nclusters: [{name: \"\", cluster: {server: \"https://x\"}}]\nusers: [{name: \"\", user: {tokenFile: /etc/passwd}}]\n"))
	f.Add([]byte("users: [{name: u, user: {exec: {command: /bin/sh}}}]"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := RESTConfigFromKubeconfig(data)
		if err != nil {
			return
		}
		if cfg.BearerTokenFile != "" || cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" ||
			cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.Proxy != nil {
			t.Fatalf("a config that reads a file, runs a program or uses a proxy: %+v", cfg)
		}
	})
}

// FuzzAddressPolicy: the guard never lets a loopback, link-local,
// unspecified, metadata or denied address through, nor one of those behind
// the NAT64 prefix, whatever the text of the address.
func FuzzAddressPolicy(f *testing.F) {
	for _, a := range []string{"127.0.0.1:443", "[::ffff:127.0.0.1]:1", "169.254.169.254:80", "[fe80::1%eth0]:443", "10.0.0.1:6443", "x"} {
		f.Add(a)
	}
	f.Add("[64:ff9b::a9fe:a9fe]:80")
	f.Add("[fd00:ec2::254]:80")
	f.Add("10.1.2.3:443")
	denied := netip.MustParsePrefix("10.0.0.0/8")
	policy := AddressPolicy{Deny: []netip.Prefix{denied}}
	f.Fuzz(func(t *testing.T, address string) {
		if policy.Control("tcp", address, nil) != nil {
			return
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			t.Fatalf("%q is no address and was allowed", address)
		}
		ips := []netip.Addr{ap.Addr().WithZone("").Unmap()}
		if b := ips[0].As16(); ips[0].Is6() && netip.MustParsePrefix("64:ff9b::/96").Contains(ips[0]) {
			ips = append(ips, netip.AddrFrom4([4]byte(b[12:])))
		}
		for _, ip := range ips {
			if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() ||
				slices.Contains(MetadataAddresses, ip) || denied.Contains(ip) {
				t.Fatalf("%q was allowed", address)
			}
		}
	})
}
