package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// fileSecret is the content of the local files that the refused kubeconfigs
// name. It must never show up in an error or a rest.Config.
const fileSecret = "s3cr3t-read-from-a-local-file"

// localFile writes fileSecret to a new file in t.TempDir and returns its path,
// so that a parser that reads it would succeed and leak the secret.
func localFile(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(fileSecret), 0o600))
	return path
}

// strictConfig is a good, self-contained kubeconfig: context "prod" uses
// cluster "prod" and user "admin". "unused" entries are clean and unused.
func strictConfig() *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["prod"] = &clientcmdapi.Cluster{
		Server:                   "https://prod.example.com:6443",
		TLSServerName:            "kubernetes.prod",
		CertificateAuthorityData: []byte("ca-pem"),
	}
	cfg.Clusters["unused"] = &clientcmdapi.Cluster{Server: "https://unused.example.com"}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		Token:                "inline-token",
		Impersonate:          "jane",
		ImpersonateUID:       "uid-1",
		ImpersonateGroups:    []string{"devs", "ops"},
		ImpersonateUserExtra: map[string][]string{"scopes": {"view"}},
	}
	cfg.AuthInfos["unused"] = &clientcmdapi.AuthInfo{Token: "unused-token"}
	cfg.Contexts["prod"] = &clientcmdapi.Context{Cluster: "prod", AuthInfo: "admin"}
	cfg.Contexts["unused"] = &clientcmdapi.Context{Cluster: "unused", AuthInfo: "unused"}
	cfg.CurrentContext = "prod"
	return cfg
}

// encode writes cfg as kubeconfig YAML.
func encode(t *testing.T, cfg *clientcmdapi.Config) []byte {
	t.Helper()
	data, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return data
}

func TestRESTConfigFromKubeconfigGood(t *testing.T) {
	got, err := RESTConfigFromKubeconfig(encode(t, strictConfig()))
	require.NoError(t, err)

	want := &rest.Config{
		Host:        "https://prod.example.com:6443",
		BearerToken: "inline-token",
		Impersonate: rest.ImpersonationConfig{
			UserName: "jane",
			UID:      "uid-1",
			Groups:   []string{"devs", "ops"},
			Extra:    map[string][]string{"scopes": {"view"}},
		},
		TLSClientConfig: rest.TLSClientConfig{ServerName: "kubernetes.prod", CAData: []byte("ca-pem")},
	}
	assert.Equal(t, want, got)
}

func TestRESTConfigFromKubeconfigGoodClientCertificate(t *testing.T) {
	cfg := strictConfig()
	cfg.Clusters["prod"] = &clientcmdapi.Cluster{
		Server:                "http://127.0.0.1:8080/prefix",
		InsecureSkipTLSVerify: true,
		DisableCompression:    true,
	}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert-pem"), ClientKeyData: []byte("key-pem")}
	// Clean unnamed entries are not used when the named ones exist.
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: "https://unnamed.example.com"}
	cfg.AuthInfos[""] = &clientcmdapi.AuthInfo{Username: "unnamed", Password: "unnamed"}

	got, err := RESTConfigFromKubeconfig(encode(t, cfg))
	require.NoError(t, err)

	want := &rest.Config{
		Host:               "http://127.0.0.1:8080/prefix",
		DisableCompression: true,
		TLSClientConfig:    rest.TLSClientConfig{Insecure: true, CertData: []byte("cert-pem"), KeyData: []byte("key-pem")},
	}
	assert.Equal(t, want, got)
}

func TestRESTConfigFromKubeconfigGoodBasicAuth(t *testing.T) {
	cfg := strictConfig()
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Username: "u", Password: "p"}

	got, err := RESTConfigFromKubeconfig(encode(t, cfg))
	require.NoError(t, err)
	assert.Equal(t, "u", got.Username)
	assert.Equal(t, "p", got.Password)
	assert.Empty(t, got.BearerToken)
}

// refusedField sets one refused field in a cluster or a user entry.
type refusedField struct {
	// yaml is the field as spelled in kubeconfig YAML.
	yaml string
	// cluster sets the field in a cluster entry; nil for a user field.
	cluster func(t *testing.T, c *clientcmdapi.Cluster)
	// user sets the field in a user entry; nil for a cluster field.
	user func(t *testing.T, a *clientcmdapi.AuthInfo)
	// says is the error message after `<kind> "<name>": `.
	says string
}

func refusedFields() []refusedField {
	return []refusedField{
		{
			yaml:    "certificate-authority",
			cluster: func(t *testing.T, c *clientcmdapi.Cluster) { c.CertificateAuthority = localFile(t, "ca.crt") },
			says:    "certificate-authority reads a local file; use certificate-authority-data",
		},
		{
			yaml:    "proxy-url",
			cluster: func(t *testing.T, c *clientcmdapi.Cluster) { c.ProxyURL = "http://169.254.169.254:80" },
			says:    "proxy-url is not allowed",
		},
		{
			yaml: "client-certificate",
			user: func(t *testing.T, a *clientcmdapi.AuthInfo) {
				a.ClientCertificate = localFile(t, "client.crt")
				a.ClientKeyData = []byte("key-pem")
			},
			says: "client-certificate reads a local file; use client-certificate-data",
		},
		{
			yaml: "client-key",
			user: func(t *testing.T, a *clientcmdapi.AuthInfo) {
				a.ClientCertificateData = []byte("cert-pem")
				a.ClientKey = localFile(t, "client.key")
			},
			says: "client-key reads a local file; use client-key-data",
		},
		{
			yaml: "tokenFile",
			user: func(t *testing.T, a *clientcmdapi.AuthInfo) { a.TokenFile = localFile(t, "token") },
			says: "tokenFile reads a local file; use token",
		},
		{
			yaml: "exec",
			user: func(t *testing.T, a *clientcmdapi.AuthInfo) {
				marker := filepath.Join(t.TempDir(), "exec-ran")
				a.Exec = &clientcmdapi.ExecConfig{
					Command:         "/bin/sh",
					Args:            []string{"-c", "touch " + marker},
					APIVersion:      "client.authentication.k8s.io/v1",
					InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
				}
				t.Cleanup(func() { assert.NoFileExists(t, marker, "the exec plugin ran") })
			},
			says: "exec runs a program; credential plugins are not allowed",
		},
		{
			yaml: "auth-provider",
			user: func(t *testing.T, a *clientcmdapi.AuthInfo) {
				a.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"idp-issuer-url": "https://issuer.example.com"}}
			},
			says: "auth-provider is not allowed; use token or client-certificate-data",
		},
	}
}

// TestRESTConfigFromKubeconfigRefusesField puts every refused field in the
// entry the current context uses, in an unused named entry and in an unused
// unnamed ("") entry. Every placement is refused.
func TestRESTConfigFromKubeconfigRefusesField(t *testing.T) {
	for _, f := range refusedFields() {
		for _, entry := range []struct{ placement, cluster, user string }{
			{placement: "used", cluster: "prod", user: "admin"},
			{placement: "unused", cluster: "unused", user: "unused"},
			{placement: "unnamed", cluster: "", user: ""},
		} {
			t.Run(f.yaml+"/"+entry.placement, func(t *testing.T) {
				cfg := strictConfig()
				var want string
				if f.cluster != nil {
					c := cfg.Clusters[entry.cluster]
					if c == nil {
						c = &clientcmdapi.Cluster{Server: "https://unnamed.example.com"}
						cfg.Clusters[entry.cluster] = c
					}
					f.cluster(t, c)
					want = `cluster "` + entry.cluster + `": ` + f.says
				} else {
					a := cfg.AuthInfos[entry.user]
					if a == nil {
						a = &clientcmdapi.AuthInfo{}
						cfg.AuthInfos[entry.user] = a
					}
					f.user(t, a)
					want = `user "` + entry.user + `": ` + f.says
				}

				got, err := RESTConfigFromKubeconfig(encode(t, cfg))
				require.Error(t, err)
				assert.Nil(t, got)
				assert.Contains(t, err.Error(), want)
				assert.NotContains(t, err.Error(), fileSecret)
			})
		}
	}
}

// TestRESTConfigFromKubeconfigUnnamedEntriesOnly is the exploit the strict
// parser fixes: with no context and an empty current-context, client-go fell
// back to the cluster and user named "" and sent the content of the local
// tokenFile to the server.
func TestRESTConfigFromKubeconfigUnnamedEntriesOnly(t *testing.T) {
	tokenFile := localFile(t, "token")
	for _, tc := range []struct {
		name string
		user string
		want []string
	}{
		{
			name: "tokenFile",
			user: "tokenFile: " + tokenFile,
			want: []string{"current-context is empty", `user "": tokenFile reads a local file; use token`},
		},
		{
			name: "inline token",
			user: "token: inline-token",
			want: []string{"current-context is empty"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := `apiVersion: v1
kind: Config
current-context: ""
clusters:
- name: ""
  cluster:
    server: https://10.0.0.1:6443
    insecure-skip-tls-verify: true
users:
- name: ""
  user:
    ` + tc.user + `
`
			got, err := RESTConfigFromKubeconfig([]byte(data))
			require.Error(t, err)
			assert.Nil(t, got)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), fileSecret)
		})
	}
}

func TestRESTConfigFromKubeconfigInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(cfg *clientcmdapi.Config)
		want string
	}{
		{
			name: "empty current-context",
			edit: func(cfg *clientcmdapi.Config) { cfg.CurrentContext = "" },
			want: "current-context is empty; it must name a context",
		},
		{
			name: "current-context names a missing context",
			edit: func(cfg *clientcmdapi.Config) { cfg.CurrentContext = "missing" },
			want: `current-context "missing" names no context`,
		},
		{
			name: "context names a missing cluster",
			edit: func(cfg *clientcmdapi.Config) { cfg.Contexts["prod"].Cluster = "missing" },
			want: `context "prod": cluster "missing" does not exist`,
		},
		{
			name: "context names a missing user",
			edit: func(cfg *clientcmdapi.Config) { cfg.Contexts["prod"].AuthInfo = "missing" },
			want: `context "prod": user "missing" does not exist`,
		},
		{
			name: "context names the unnamed cluster",
			edit: func(cfg *clientcmdapi.Config) {
				cfg.Clusters[""] = &clientcmdapi.Cluster{Server: "https://unnamed.example.com"}
				cfg.Contexts["prod"].Cluster = ""
			},
			want: `context "prod": cluster is empty; it must name a cluster`,
		},
		{
			name: "context names the unnamed user",
			edit: func(cfg *clientcmdapi.Config) {
				cfg.AuthInfos[""] = &clientcmdapi.AuthInfo{Token: "unnamed"}
				cfg.Contexts["prod"].AuthInfo = ""
			},
			want: `context "prod": user is empty; it must name a user`,
		},
		{
			name: "missing server",
			edit: func(cfg *clientcmdapi.Config) { cfg.Clusters["prod"].Server = "" },
			want: `cluster "prod": server is empty`,
		},
		{
			name: "server is not a URL",
			edit: func(cfg *clientcmdapi.Config) { cfg.Clusters["prod"].Server = "https://[::1" },
			want: `cluster "prod": server is not a URL`,
		},
		{
			name: "server without a scheme",
			edit: func(cfg *clientcmdapi.Config) { cfg.Clusters["prod"].Server = "prod.example.com" },
			want: `cluster "prod": server "prod.example.com" is not an https:// or http:// URL`,
		},
		{
			name: "server with another scheme",
			edit: func(cfg *clientcmdapi.Config) { cfg.Clusters["prod"].Server = "unix:///var/run/k8s.sock" },
			want: `is not an https:// or http:// URL`,
		},
		{
			name: "server without a host",
			edit: func(cfg *clientcmdapi.Config) { cfg.Clusters["prod"].Server = "https:///api" },
			want: `cluster "prod": server "https:///api" has no host`,
		},
		{
			name: "server with user info",
			edit: func(cfg *clientcmdapi.Config) { cfg.Clusters["prod"].Server = "https://u:hunter2@prod.example.com" },
			want: `has user info; use username and password`,
		},
		{
			name: "insecure with CA data",
			edit: func(cfg *clientcmdapi.Config) { cfg.Clusters["prod"].InsecureSkipTLSVerify = true },
			want: `cluster "prod": insecure-skip-tls-verify and certificate-authority-data are both set; use one`,
		},
		{
			name: "client certificate without key",
			edit: func(cfg *clientcmdapi.Config) {
				cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert-pem")}
			},
			want: `user "admin": client-certificate-data is set without client-key-data`,
		},
		{
			name: "client key without certificate",
			edit: func(cfg *clientcmdapi.Config) {
				cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientKeyData: []byte("key-pem")}
			},
			want: `user "admin": client-key-data is set without client-certificate-data`,
		},
		{
			name: "token and basic auth",
			edit: func(cfg *clientcmdapi.Config) { cfg.AuthInfos["admin"].Username = "u" },
			want: `user "admin": token and username/password are both set; use one`,
		},
		{
			name: "impersonated groups without user",
			edit: func(cfg *clientcmdapi.Config) { cfg.AuthInfos["admin"].Impersonate = "" },
			want: `user "admin": as-uid, as-groups or as-user-extra is set without as`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := strictConfig()
			tc.edit(cfg)
			got, err := RESTConfigFromKubeconfig(encode(t, cfg))
			require.Error(t, err)
			assert.Nil(t, got)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "hunter2")
		})
	}
}

func TestRESTConfigFromKubeconfigNotAKubeconfig(t *testing.T) {
	for _, data := range []string{
		"",
		"{{{ not yaml at all",
		"\x00\x01\x02",
		"just a sentence",
		"apiVersion: v1\nkind: Pod\n",
	} {
		t.Run(data, func(t *testing.T) {
			got, err := RESTConfigFromKubeconfig([]byte(data))
			require.Error(t, err)
			assert.Nil(t, got)
		})
	}
}

// TestRESTConfigFromKubeconfigReportsAllProblemsSorted checks that every
// problem is reported, in the same order whatever the order of the maps.
func TestRESTConfigFromKubeconfigReportsAllProblemsSorted(t *testing.T) {
	cfg := strictConfig()
	cfg.Clusters["unused"].ProxyURL = "http://proxy.example.com"
	cfg.Clusters["prod"].CertificateAuthority = "/etc/ca.crt"
	cfg.AuthInfos["unused"].TokenFile = "/var/run/token"
	cfg.AuthInfos["admin"].Exec = &clientcmdapi.ExecConfig{Command: "true"}
	cfg.AuthInfos["zeta"] = &clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "gcp"}}
	cfg.Contexts["prod"].AuthInfo = "missing"
	data := encode(t, cfg)

	want := strings.Join([]string{
		`cluster "prod": certificate-authority reads a local file; use certificate-authority-data`,
		`cluster "unused": proxy-url is not allowed`,
		`context "prod": user "missing" does not exist`,
		`user "admin": exec runs a program; credential plugins are not allowed`,
		`user "unused": tokenFile reads a local file; use token`,
		`user "zeta": auth-provider is not allowed; use token or client-certificate-data`,
	}, "; ")
	for range 20 {
		_, err := RESTConfigFromKubeconfig(data)
		require.Error(t, err)
		require.Equal(t, want, err.Error())
	}
}
