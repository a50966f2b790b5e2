package cluster

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kumodo/convoy-apiserver/pkg/egress"
)

// RESTConfigFromKubeconfig parses a kubeconfig that an untrusted user wrote
// and returns the rest.Config of its current context.
//
// The parser is strict. current-context must name an existing context whose
// cluster and user name existing entries; there is no fallback to unnamed
// ("") entries or to defaults. No entry of the kubeconfig, used or not, may
// read a local file, run a program or send traffic through a proxy. The
// rest.Config is built only from the inline data of the chosen cluster and
// user, never through clientcmd's merging client configs, and nothing is read
// from the file system or the environment.
//
// All problems found are reported together in one error, sorted, joined
// with "; ".
func RESTConfigFromKubeconfig(data []byte) (*rest.Config, error) {
	raw, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("parsing kubeconfig: %w", err)
	}
	if err := validateKubeconfig(raw); err != nil {
		return nil, err
	}
	kctx := raw.Contexts[raw.CurrentContext]
	return restConfig(raw.Clusters[kctx.Cluster], raw.AuthInfos[kctx.AuthInfo]), nil
}

// validateKubeconfig returns one error naming every problem of raw, or nil.
// When it returns nil, the current context, its cluster and its user exist.
func validateKubeconfig(raw *clientcmdapi.Config) error {
	var problems []string
	for name, c := range raw.Clusters {
		problems = append(problems, prefixed("cluster", name, forbiddenClusterFields(c))...)
	}
	for name, a := range raw.AuthInfos {
		problems = append(problems, prefixed("user", name, forbiddenUserFields(a))...)
	}
	problems = append(problems, currentContextProblems(raw)...)
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	return errors.New(strings.Join(problems, "; "))
}

// prefixed returns problems, each prefixed with the kind and name of the
// kubeconfig entry it is about, e.g. `user "admin": ...`.
func prefixed(kind, name string, problems []string) []string {
	out := make([]string, 0, len(problems))
	for _, p := range problems {
		out = append(out, fmt.Sprintf("%s %q: %s", kind, name, p))
	}
	return out
}

// forbiddenClusterFields returns a problem for every field of c that reads a
// local file or redirects traffic.
func forbiddenClusterFields(c *clientcmdapi.Cluster) []string {
	if c == nil {
		return nil
	}
	var problems []string
	if c.CertificateAuthority != "" {
		problems = append(problems, "certificate-authority reads a local file; use certificate-authority-data")
	}
	if c.ProxyURL != "" {
		problems = append(problems, "proxy-url is not allowed")
	}
	return problems
}

// forbiddenUserFields returns a problem for every field of a that reads a
// local file or runs a program.
func forbiddenUserFields(a *clientcmdapi.AuthInfo) []string {
	if a == nil {
		return nil
	}
	var problems []string
	if a.ClientCertificate != "" {
		problems = append(problems, "client-certificate reads a local file; use client-certificate-data")
	}
	if a.ClientKey != "" {
		problems = append(problems, "client-key reads a local file; use client-key-data")
	}
	if a.TokenFile != "" {
		problems = append(problems, "tokenFile reads a local file; use token")
	}
	if a.Exec != nil {
		problems = append(problems, "exec runs a program; credential plugins are not allowed")
	}
	if a.AuthProvider != nil {
		problems = append(problems, "auth-provider is not allowed; use token or client-certificate-data")
	}
	return problems
}

// currentContextProblems checks that current-context names an existing
// context, that its cluster and user exist, and that those two entries are
// usable.
func currentContextProblems(raw *clientcmdapi.Config) []string {
	if raw.CurrentContext == "" {
		return []string{"current-context is empty; it must name a context"}
	}
	kctx := raw.Contexts[raw.CurrentContext]
	if kctx == nil {
		return []string{fmt.Sprintf("current-context %q names no context", raw.CurrentContext)}
	}
	var refs, problems []string
	if p := entryProblem("cluster", kctx.Cluster, raw.Clusters[kctx.Cluster] != nil); p != "" {
		refs = append(refs, p)
	} else {
		problems = append(problems, prefixed("cluster", kctx.Cluster, clusterProblems(raw.Clusters[kctx.Cluster]))...)
	}
	if p := entryProblem("user", kctx.AuthInfo, raw.AuthInfos[kctx.AuthInfo] != nil); p != "" {
		refs = append(refs, p)
	} else {
		problems = append(problems, prefixed("user", kctx.AuthInfo, userProblems(raw.AuthInfos[kctx.AuthInfo]))...)
	}
	return append(prefixed("context", raw.CurrentContext, refs), problems...)
}

// entryProblem describes why the context's reference to the kind entry
// named name is unusable, or returns "" when the entry exists.
func entryProblem(kind, name string, exists bool) string {
	switch {
	case name == "":
		return fmt.Sprintf("%s is empty; it must name a %s", kind, kind)
	case !exists:
		return fmt.Sprintf("%s %q does not exist", kind, name)
	}
	return ""
}

// clusterProblems returns the problems of the cluster the current context
// uses, other than the forbidden fields.
func clusterProblems(c *clientcmdapi.Cluster) []string {
	var problems []string
	if err := checkServer(c.Server); err != nil {
		problems = append(problems, err.Error())
	}
	if c.InsecureSkipTLSVerify && len(c.CertificateAuthorityData) > 0 {
		problems = append(problems, "insecure-skip-tls-verify and certificate-authority-data are both set; use one")
	}
	return problems
}

// checkServer checks that server is an https:// URL (or an http:// one
// whose host is a loopback address or localhost, for local development:
// the dialer still refuses loopback unless --allow-loopback-clusters) with
// a host and without user info. The token or client key of the kubeconfig
// must not cross a network in clear text. The messages do not repeat a
// password the URL may hold.
func checkServer(server string) error {
	if server == "" {
		return errors.New("server is empty")
	}
	u, err := url.Parse(server)
	if err != nil {
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err // without the URL, which may hold a password
		}
		return fmt.Errorf("server is not a URL: %w", err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("server %q is not an https:// or http:// URL", u.Redacted())
	}
	if u.Host == "" {
		return fmt.Errorf("server %q has no host", u.Redacted())
	}
	if u.Scheme == "http" && !egress.IsLoopbackHost(u.Hostname()) {
		return fmt.Errorf("server %q is plain http: a Cluster's API server is reached over https (plain http only to a loopback address, for local development)", u.Redacted())
	}
	if u.User != nil {
		return fmt.Errorf("server %q has user info; use username and password", u.Redacted())
	}
	return nil
}

// userProblems returns the problems of the user the current context uses,
// other than the forbidden fields. client-go refuses the same.
func userProblems(a *clientcmdapi.AuthInfo) []string {
	var problems []string
	hasCert, hasKey := len(a.ClientCertificateData) > 0, len(a.ClientKeyData) > 0
	if hasCert && !hasKey {
		problems = append(problems, "client-certificate-data is set without client-key-data")
	}
	if hasKey && !hasCert {
		problems = append(problems, "client-key-data is set without client-certificate-data")
	}
	if a.Token != "" && (a.Username != "" || a.Password != "") {
		problems = append(problems, "token and username/password are both set; use one")
	}
	if a.Impersonate == "" && (a.ImpersonateUID != "" || len(a.ImpersonateGroups) > 0 || len(a.ImpersonateUserExtra) > 0) {
		problems = append(problems, "as-uid, as-groups or as-user-extra is set without as")
	}
	return problems
}

// restConfig builds the rest.Config of cluster c and user a from their
// inline data only.
func restConfig(c *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) *rest.Config {
	return &rest.Config{
		Host:               c.Server,
		DisableCompression: c.DisableCompression,
		BearerToken:        a.Token,
		Username:           a.Username,
		Password:           a.Password,
		Impersonate: rest.ImpersonationConfig{
			UserName: a.Impersonate,
			UID:      a.ImpersonateUID,
			Groups:   a.ImpersonateGroups,
			Extra:    a.ImpersonateUserExtra,
		},
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   c.InsecureSkipTLSVerify,
			ServerName: c.TLSServerName,
			CAData:     c.CertificateAuthorityData,
			CertData:   a.ClientCertificateData,
			KeyData:    a.ClientKeyData,
		},
	}
}
