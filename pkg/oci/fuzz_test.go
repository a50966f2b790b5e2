package oci

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/require"
)

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
			entry, err := DockerConfigEntry(data, repo)
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
// reading of a key, kept apart from DockerConfigEntry's so that the fuzz
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
