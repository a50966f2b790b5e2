package source

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// requireReasoned fails unless err is a *failure.Error with a reason and a
// message.
func requireReasoned(t *testing.T, err error) {
	t.Helper()
	f, ok := failure.As(err)
	require.True(t, ok, "not a failure.Error: %v", err)
	require.NotEmpty(t, f.Reason)
	require.NotEmpty(t, f.Message)
}

// FuzzIndex: any index.yaml of a Helm repository and any version
// constraint give an entry of that chart, or a reasoned error; never a
// panic. An entry picked has the version asked, or else the highest version
// of the chart that meets the constraint ("*" when none is asked); no entry
// is picked only when none meets it.
func FuzzIndex(f *testing.F) {
	f.Add("apiVersion: v1\nentries:\n  web:\n  - {version: 1.2.0, urls: [web-1.2.0.tgz], digest: abc}\n  - {version: 2.0.0-rc.1, urls: [a]}\n", "")
	f.Add("apiVersion: v1\nentries:\n  web:\n  - {version: 1.2.0}\n  - {version: 1.3.0}\n", ">=1.2.0 <2.0.0")
	f.Add("apiVersion: v1\nentries:\n  web:\n  - {version: 1.3.0}\n  - {version: 1.10.0}\n  - {version: v1.9.0}\n  - {version: 2.0.0}\n", "^1.2")
	f.Add("apiVersion: v1\nentries:\n  web:\n  - {version: 1.0.0}\n  - {version: v1.0.0}\n  - {version: 1.0.0+b}\n", "~1")
	f.Add("{\"apiVersion\": \"v1\", \"entries\": {\"web\": [{\"version\": \"v1\"}]}}", "v1")
	f.Add("a: &a [*a, *a]\nb: &b [*a, *a]\n", "~1")
	f.Add("entries: {web: 3}", "||")
	f.Fuzz(func(t *testing.T, text, version string) {
		idx, err := parseIndex("https://charts.example", []byte(text))
		if err != nil {
			requireReasoned(t, err)
			return
		}
		entries := idx.entries["web"]
		src := &convoyv1alpha1.HelmRepositorySource{URL: "https://charts.example", Chart: "web", Version: version}
		entry, err := pickVersion(src, entries)
		exact := version != "" && slices.ContainsFunc(entries, func(e indexEntry) bool { return e.Version == version })
		want := version
		if want == "" {
			want = "*"
		}
		constraint, cerr := semver.NewConstraint(want)
		// meeting lists the versions of the entries that meet the constraint.
		var meeting []*semver.Version
		if cerr == nil {
			for _, e := range entries {
				if v, err := semver.NewVersion(e.Version); err == nil && constraint.Check(v) {
					meeting = append(meeting, v)
				}
			}
		}
		if err != nil {
			requireReasoned(t, err)
			if fe, _ := failure.As(err); fe.Reason != ReasonIndexTooLarge {
				require.False(t, exact, "version %q is in the index", version)
				require.Empty(t, meeting, "versions meet %q", want)
			}
			return
		}
		require.NotNil(t, entry)
		require.Contains(t, entries, *entry)
		if exact {
			require.Equal(t, version, entry.Version)
			return
		}
		require.NoError(t, cerr, "an entry for %q, neither a version of the index nor a constraint", version)
		picked, err := semver.NewVersion(entry.Version)
		require.NoError(t, err, "picked %q, not a version", entry.Version)
		require.True(t, constraint.Check(picked), "picked %s, which does not meet %q", entry.Version, want)
		for _, v := range meeting {
			require.False(t, v.GreaterThan(picked), "picked %s, but %s meets %q too", entry.Version, v.Original(), want)
		}
	})
}

// FuzzDockerConfig: any .dockerconfigjson gives the entry of the registry or
// none, or an error; never a panic. An entry returned is the value of a key
// that names the repository's registry (and, if the key has a path, a path
// the repository's starts with), so that a credential never goes to another
// host; a key that is exactly the registry's host is always found.
func FuzzDockerConfig(f *testing.F) {
	f.Add([]byte(`{"auths":{"registry.example":{"auth":"YTpi"}}}`))
	f.Add([]byte(`{"auths":{"https://registry.example/v2/":{"username":"a"},"registry.example/team":{}}}`))
	f.Add([]byte(`{"auths":{"registry.example.evil":{"auth":"a"},"evil/registry.example":{"auth":"b"},"registry.example/other":{"auth":"c"}}}`))
	f.Add([]byte(`{"auths":{"https://index.docker.io/v1/":{"auth":"YTpi"},"registry-1.docker.io/library":{}}}`))
	f.Add([]byte(`{"auths":{"REGISTRY.example/team/web":{"a":1},"registry.example/team/we":{"a":2}}}`))
	f.Add([]byte(`{"auths":{"%zz":{}}}`))
	f.Add([]byte(`[]`))
	var repos []name.Repository
	for _, s := range []string{"registry.example/team/web", "docker.io/library/web"} {
		repo, err := name.NewRepository(s)
		require.NoError(f, err)
		repos = append(repos, repo)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var cfg struct {
			Auths map[string]json.RawMessage `json:"auths"`
		}
		parsed := json.Unmarshal(data, &cfg) == nil
		for _, repo := range repos {
			entry, err := dockerConfigEntry(data, repo)
			if err != nil || entry == nil {
				if parsed {
					_, exact := cfg.Auths[repo.RegistryStr()]
					require.False(t, exact, "the key %q is not found", repo.RegistryStr())
				}
				continue
			}
			require.True(t, parsed, "an entry from a config that does not parse")
			var keys []string
			for k, v := range cfg.Auths {
				if bytes.Equal(v, entry) {
					keys = append(keys, k)
				}
			}
			require.NotEmpty(t, keys, "the entry %s is no key's value", entry)
			require.True(t, slices.ContainsFunc(keys, func(k string) bool { return keyNames(k, repo) }),
				"the entry %s of keys %q is for another registry than %s", entry, keys, repo)
		}
	})
}

// dockerHubHosts are the names a docker config may give Docker Hub under.
var dockerHubHosts = []string{"docker.io", "index.docker.io", "registry-1.docker.io"}

// configKey splits a key of a docker config as a URL with an optional
// scheme: its host (without user info) and its path, percent-decoded.
var configKey = regexp.MustCompile(`^(?:[A-Za-z][A-Za-z0-9+.-]*://)?(?:[^/?#]*@)?([^/?#@]*)([^?#]*)`)

// keyNames tells whether the key of a docker config names the registry of
// repo and a path that the repository's starts with. It is the test's own
// reading of a key, kept apart from dockerConfigEntry's so that the fuzz
// target checks one against the other.
func keyNames(key string, repo name.Repository) bool {
	m := configKey.FindStringSubmatch(key)
	if m == nil {
		return false
	}
	host, want := strings.ToLower(m[1]), strings.ToLower(repo.RegistryStr())
	if slices.Contains(dockerHubHosts, host) && slices.Contains(dockerHubHosts, want) {
		host = want
	}
	if host != want {
		return false
	}
	path, err := url.PathUnescape(m[2])
	if err != nil {
		return false
	}
	path = strings.Trim(path, "/")
	if path == "" || path == "v1" || path == "v2" {
		return true
	}
	return repo.RepositoryStr() == path || strings.HasPrefix(repo.RepositoryStr(), path+"/")
}
