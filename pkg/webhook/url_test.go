package webhook

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		raw  string
		want string // "": refused
	}{
		{"https://github.com/Acme/deploy.git", "github.com/Acme/deploy"},
		{"https://github.com/Acme/deploy", "github.com/Acme/deploy"},
		{"https://github.com/Acme/deploy/", "github.com/Acme/deploy"},
		{"http://GitHub.com/Acme/deploy.git/", "github.com/Acme/deploy"},
		{"https://token@github.com:443/Acme/deploy?x=1#y", "github.com/Acme/deploy"},
		{"git@github.com:Acme/deploy.git", "github.com/Acme/deploy"},
		{"ssh://git@github.com/Acme/deploy.git", "github.com/Acme/deploy"},
		{"git://github.com/Acme/deploy.git", "github.com/Acme/deploy"},
		{"ssh://git@gitlab.example.com:2222/platform/team/deploy.git", "gitlab.example.com/platform/team/deploy"},
		{"https://gitlab.example.com:8443/platform/team/deploy", "gitlab.example.com/platform/team/deploy"},
		{"ssh://git@bitbucket.example.com:7999/plat/deploy.git", "bitbucket.example.com/plat/deploy"},
		{"https://bitbucket.example.com/scm/plat/deploy.git", "bitbucket.example.com/scm/plat/deploy"},
		{"ssh://git@[::1]:2222/org/repo.git", "[::1]/org/repo"},
		{"git@[::1]:org/repo.git", "[::1]/org/repo"},
		{"oci://harbor.example.com/platform/web-bundle", "harbor.example.com/platform/web-bundle"},
		{"OCI://Harbor.example.com:443/platform/web-bundle", "harbor.example.com/platform/web-bundle"},
		{"harbor.example.com/platform/web-bundle", "harbor.example.com/platform/web-bundle"},
		{"harbor.example.com:8443/platform/web-bundle", "harbor.example.com/platform/web-bundle"},
		{"[::1]:5000/platform/web", "[::1]/platform/web"},
		{"registry.internal:5000/ops/bundle", "registry.internal/ops/bundle"},
		{"github.com/Acme/deploy", "github.com/Acme/deploy"}, // a key is its own key
		{"  https://github.com/Acme/deploy  ", "github.com/Acme/deploy"},
		{"", ""},
		{"https://github.com", ""},
		{"https://github.com/", ""},
		{"ftp://github.com/Acme/deploy", ""},
		{"deploy", ""},
		{"git@github.com", ""},
		{"https://github.com/" + strings.Repeat("a", MaxURLLength), ""},
		{"https://github.com/a%25b", ""}, // its key, github.com/a%b, is not a URL
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, ok := Normalize(tt.raw)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.want != "", ok)
			if ok {
				again, ok := Normalize(got)
				assert.True(t, ok)
				assert.Equal(t, got, again, "idempotent")
			}
		})
	}
}

func TestMatches(t *testing.T) {
	receive := func(typ Type, h http.Header, name string) Delivery {
		t.Helper()
		d, err := Parse(typ, h, fixture(t, name))
		require.NoError(t, err)
		return d
	}
	github := receive(GitHub, headers("X-GitHub-Event", "push"), "github-push.json")
	gitlab := receive(GitLab, headers("X-Gitlab-Event", "Push Hook"), "gitlab-push.json")
	bitbucket := receive(BitbucketServer, headers("X-Event-Key", "repo:refs_changed"), "bitbucket-server-refs-changed.json")
	harbor := receive(Harbor, nil, "harbor-push-artifact.json")
	ping := receive(GitHub, headers("X-GitHub-Event", "ping"), "github-ping.json")
	ping.Repositories = github.Repositories

	tests := []struct {
		name string
		d    Delivery
		url  string
		ref  string
		want bool
	}{
		{"GitHub, the https URL and its branch", github, "https://github.com/Acme/deploy", "refs/heads/main", true},
		{"GitHub, the scp-like URL", github, "git@github.com:Acme/deploy.git", "refs/heads/main", true},
		{"GitHub, ssh://", github, "ssh://git@github.com/Acme/deploy", "refs/heads/main", true},
		{"GitHub, any ref (semver)", github, "https://github.com/Acme/deploy.git", "", true},
		{"GitHub, another branch", github, "https://github.com/Acme/deploy", "refs/heads/dev", false},
		{"GitHub, a bare branch name is not a ref", github, "https://github.com/Acme/deploy", "main", false},
		{"GitHub, another repository", github, "https://github.com/Acme/deploy-other", "refs/heads/main", false},
		{"GitHub, the path's case counts", github, "https://github.com/acme/deploy", "refs/heads/main", false},
		{"GitHub, the host's case does not", github, "https://GITHUB.com/Acme/deploy", "refs/heads/main", true},
		{"GitLab, https for an ssh:// on 2222", gitlab, "https://gitlab.example.com/platform/team/deploy.git", "refs/heads/release/1.x", true},
		{"GitLab, scp-like", gitlab, "git@gitlab.example.com:platform/team/deploy.git", "refs/heads/release/1.x", true},
		{"GitLab, the parent group", gitlab, "https://gitlab.example.com/platform/team", "", false},
		{"Bitbucket Server, its tag", bitbucket, "https://bitbucket.example.com/scm/plat/deploy.git", "refs/tags/v3.1.0", true},
		{"Bitbucket Server, ssh on 7999", bitbucket, "ssh://git@bitbucket.example.com:7999/plat/deploy.git", "refs/heads/main", true},
		{"Harbor, the OCI source and its tag", harbor, "oci://harbor.example.com/platform/web-bundle", "1.7.0", true},
		{"Harbor, another tag", harbor, "oci://harbor.example.com/platform/web-bundle", "1.6.0", false},
		{"Harbor, another repository", harbor, "oci://harbor.example.com/platform/web", "1.7.0", false},
		{"a ping matches nothing", ping, "https://github.com/Acme/deploy", "", false},
		{"a source URL that does not normalise", github, "not a url", "", false},
		{"an empty delivery", Delivery{Type: GitHub}, "https://github.com/Acme/deploy", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Matches(tt.d, tt.url, tt.ref))
		})
	}
}
