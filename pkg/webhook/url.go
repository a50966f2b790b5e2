package webhook

import (
	"net"
	"slices"
	"strings"

	"github.com/kumodo/convoy-apiserver/pkg/sourceurl"
)

// Normalize returns the key of a repository's URL, the one of every
// spelling of it: HOST/PATH, the host in lower case, without the scheme,
// user, port, query, fragment, the slashes at either end of the path and,
// for Git, a trailing .git; the path keeps its case (servers differ on
// whether it matters). pkg/sourceurl parses it, as kubectl convoy diff
// --source-url does:
//
//   - Git: https://host/org/repo(.git), http://, ssh://git@host[:port]/org/repo(.git),
//     git@host:org/repo(.git) (scp-like), git://;
//   - OCI: oci://host[:port]/path, and host[:port]/path without a scheme
//     (as docker, helm and Harbor write a repository). Without a scheme,
//     host:DIGITS/path is a host and port, as docker reads it, not Git's
//     scp-like host:path.
//
// Unlike pkg/sourceurl's keys, the port is dropped, for every scheme: a
// forge serves one repository over https on 443 and ssh on 2222, and a
// match only asks for a refresh, so that two services on one host are
// taken for one costs a refresh, where keeping the port would lose one.
//
// It returns false for what is none of these, longer than MaxURLLength,
// or whose key is not its own key (odd escapes): Normalize(key) is key.
func Normalize(raw string) (string, bool) {
	key, ok := normalize(raw)
	if !ok {
		return "", false
	}
	if again, ok := normalize(key); !ok || again != key {
		return "", false
	}
	return key, true
}

// normalize is Normalize without the check that the key is a fixed point.
func normalize(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > MaxURLLength {
		return "", false
	}
	key, err := sourceurl.Normalize(kindOf(raw), raw)
	if err != nil {
		return "", false
	}
	hostport, path, _ := strings.Cut(key, "/")
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	if host == "" || path == "" {
		return "", false
	}
	return host + "/" + path, true
}

// kindOf is the kind of URL raw is: OCI for oci:// and for host/path or
// host:port/path without a scheme, Git otherwise.
func kindOf(raw string) sourceurl.Kind {
	scheme, _, found := strings.Cut(raw, "://")
	if found {
		if strings.EqualFold(scheme, "oci") {
			return sourceurl.OCI
		}
		return sourceurl.Git
	}
	if v6, ok := strings.CutPrefix(raw, "["); ok {
		// [v6]/path and [v6]:port/path are a host, [v6]:path is scp-like.
		_, after, _ := strings.Cut(v6, "]")
		if strings.HasPrefix(after, "/") || strings.HasPrefix(after, ":") && isPort(after[1:]) {
			return sourceurl.OCI
		}
		return sourceurl.Git
	}
	colon := strings.IndexByte(raw, ':')
	slash := strings.IndexByte(raw, '/')
	if colon < 0 || (slash >= 0 && slash < colon) {
		return sourceurl.OCI // host/path: no colon before the path
	}
	if !strings.Contains(raw[:colon], "@") && isPort(raw[colon+1:]) {
		return sourceurl.OCI
	}
	return sourceurl.Git
}

// isPort tells whether rest starts with DIGITS/ (the port of
// host:port/path).
func isPort(rest string) bool {
	digits, _, found := strings.Cut(rest, "/")
	if !found || digits == "" {
		return false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Matches tells whether the delivery d concerns a source at sourceURL
// following ref: one of its repositories has sourceURL's key (Normalize),
// and ref is empty (any change of the repository concerns the source: a
// semver range over tags) or one of the delivery's refs (a Git ref's full
// name: refs/heads/main, refs/tags/v1.2.0) or tags (an OCI tag: 1.2.0).
// A ping, a URL that does not normalise, a delivery of no refs for a ref
// asked match nothing.
func Matches(d Delivery, sourceURL, ref string) bool {
	if d.Ping {
		return false
	}
	want, ok := Normalize(sourceURL)
	if !ok {
		return false
	}
	if ref != "" && !slices.Contains(d.Refs, ref) && !slices.Contains(d.Tags, ref) {
		return false
	}
	for _, r := range d.Repositories {
		if got, ok := Normalize(r); ok && got == want {
			return true
		}
	}
	return false
}
