package cluster

import "testing"

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
