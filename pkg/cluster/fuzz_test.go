package cluster

import (
	"net/netip"
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

// FuzzAddressPolicy: the guard never lets a loopback or link-local address
// through, whatever the text of the address.
func FuzzAddressPolicy(f *testing.F) {
	for _, a := range []string{"127.0.0.1:443", "[::ffff:127.0.0.1]:1", "169.254.169.254:80", "[fe80::1%eth0]:443", "10.0.0.1:6443", "x"} {
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, address string) {
		if (AddressPolicy{}).Control("tcp", address, nil) != nil {
			return
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			t.Fatalf("%q is no address and was allowed", address)
		}
		if ip := ap.Addr().Unmap(); ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() {
			t.Fatalf("%q was allowed", address)
		}
	})
}
