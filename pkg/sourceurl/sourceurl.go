// Package sourceurl tells whether two spellings of a source's URL name the
// same repository: a Git repository however it is written (ssh://,
// git@host:org/repo, https://, with or without .git, a trailing slash, the
// host's case, a default port), an OCI repository or a Helm repository
// after the same light normalisation. kubectl convoy diff --source-url
// selects the Releases of one repository with it.
package sourceurl

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// Kind is the kind of a source that has a URL.
type Kind string

// Kinds of sources with a URL; a ConfigMap source has none.
const (
	Git  Kind = "Git"
	OCI  Kind = "OCI"
	Helm Kind = "Helm"
)

// kinds are the Kinds a Matcher tries, in order.
var kinds = []Kind{Git, OCI, Helm}

// defaultPorts are the ports a URL of each scheme names by default: a URL
// that names one is the URL without it.
var defaultPorts = map[string]string{
	"https": "443", "http": "80", "oci": "443",
	"ssh": "22", "git+ssh": "22", "ssh+git": "22", "git": "9418",
}

// schemes are the schemes each Kind accepts, the first the one of a URL
// written without one (for Git the scp-like [user@]host:path, ssh; for OCI
// host/path, oci).
var schemes = map[Kind][]string{
	Git:  {"ssh", "https", "http", "git+ssh", "ssh+git", "git"},
	OCI:  {"oci", "https", "http"},
	Helm: {"https", "http"},
}

// Of returns the kind and URL of src, and false for a source without a URL
// (a ConfigMap).
func Of(src convoyv1alpha1.ReleaseSource) (Kind, string, bool) {
	switch {
	case src.Git != nil:
		return Git, src.Git.URL, true
	case src.OCIRepository != nil:
		return OCI, src.OCIRepository.URL, true
	case src.HelmRepository != nil:
		return Helm, src.HelmRepository.URL, true
	}
	return "", "", false
}

// Normalize returns the key of raw as a URL of kind: HOST[:PORT]/PATH, the
// host in lower case, without the scheme, user, default port, query,
// fragment and the slashes at either end of the path; a Git path also
// loses a trailing .git, a Helm path a trailing /index.yaml. Two URLs with
// the same key name the same repository. The path keeps its case: servers
// differ on whether it matters.
func Normalize(kind Kind, raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", errors.New("empty URL")
	}
	u, err := parse(kind, raw)
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "" {
		scheme = schemes[kind][0] // the scheme a URL of kind has without one
	}
	if !slices.Contains(schemes[kind], scheme) {
		return "", fmt.Errorf("%q is not a %s repository URL: scheme %q", raw, kind, scheme)
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", fmt.Errorf("%q is not a %s repository URL: no host", raw, kind)
	}
	if port := u.Port(); port != "" && port != defaultPorts[scheme] {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6, as in the URL
	}
	path := strings.Trim(u.Path, "/")
	switch kind {
	case Git:
		path = strings.TrimRight(strings.TrimSuffix(path, ".git"), "/")
	case Helm:
		if path == "index.yaml" || strings.HasSuffix(path, "/index.yaml") {
			path = strings.TrimRight(strings.TrimSuffix(path, "index.yaml"), "/")
		}
	}
	if path == "" && kind != Helm {
		return "", fmt.Errorf("%q is not a %s repository URL: no path", raw, kind)
	}
	return strings.TrimSuffix(host+"/"+collapseSlashes(path), "/"), nil
}

// parse parses raw as a URL of kind: a URL without a scheme is scp-like
// for Git (git@host:org/repo), host/path for OCI (as docker and helm write
// a repository), and refused for Helm.
func parse(kind Kind, raw string) (*url.URL, error) {
	if !strings.Contains(raw, "://") {
		switch kind {
		case Git:
			return parseSCP(raw)
		case Helm:
			return nil, fmt.Errorf("%q is not a Helm repository URL: no scheme", raw)
		}
		raw = "//" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a %s repository URL: %w", raw, kind, err)
	}
	return u, nil
}

// parseSCP parses Git's scp-like syntax, [user@]host:path or
// [user@][v6]:path, which has no port.
func parseSCP(raw string) (*url.URL, error) {
	rest := raw
	if at := strings.Index(rest, "@"); at >= 0 && at < strings.Index(rest, ":") {
		rest = rest[at+1:]
	}
	var host, path string
	if v6, ok := strings.CutPrefix(rest, "["); ok {
		end := strings.Index(v6, "]:")
		if end < 0 {
			return nil, fmt.Errorf("%q is not a Git repository URL: no ]: after [", raw)
		}
		host, path = v6[:end], v6[end+2:]
	} else {
		h, p, found := strings.Cut(rest, ":")
		if !found || strings.Contains(h, "/") {
			return nil, fmt.Errorf("%q is not a Git repository URL: neither SCHEME://HOST/PATH nor [USER@]HOST:PATH", raw)
		}
		host, path = h, p
	}
	if host == "" {
		return nil, fmt.Errorf("%q is not a Git repository URL: no host", raw)
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return &url.URL{Scheme: "ssh", Host: host, Path: path}, nil
}

// collapseSlashes writes each run of slashes in path as one.
func collapseSlashes(path string) string {
	for strings.Contains(path, "//") {
		path = strings.ReplaceAll(path, "//", "/")
	}
	return path
}

// Matcher matches the URLs of sources against one URL, as each kind
// writes it.
type Matcher struct {
	raw  string
	keys map[Kind]string
}

// NewMatcher returns a Matcher of raw; an error when raw is a URL of no
// kind.
func NewMatcher(raw string) (*Matcher, error) {
	m := &Matcher{raw: raw, keys: map[Kind]string{}}
	var errs []error
	for _, k := range kinds {
		key, err := Normalize(k, raw)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m.keys[k] = key
	}
	if len(m.keys) == 0 {
		return nil, fmt.Errorf("%q is not the URL of a Git, OCI or Helm repository: %w", raw, errors.Join(errs...))
	}
	return m, nil
}

// Match tells whether the source URL u of kind names the Matcher's
// repository. A URL that does not parse matches nothing.
func (m *Matcher) Match(kind Kind, u string) bool {
	want, ok := m.keys[kind]
	if !ok {
		return false
	}
	got, err := Normalize(kind, u)
	return err == nil && got == want
}

// MatchSource tells whether src is a source of the Matcher's repository.
func (m *Matcher) MatchSource(src convoyv1alpha1.ReleaseSource) bool {
	kind, u, ok := Of(src)
	return ok && m.Match(kind, u)
}

// String is the URL the Matcher was made of.
func (m *Matcher) String() string { return m.raw }
