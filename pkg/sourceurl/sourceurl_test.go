package sourceurl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		kind Kind
		raw  string
		want string
		err  string
	}{
		{kind: Git, raw: "https://github.com/org/repo", want: "github.com/org/repo"},
		{kind: Git, raw: "https://github.com/org/repo.git", want: "github.com/org/repo"},
		{kind: Git, raw: "https://github.com/org/repo/", want: "github.com/org/repo"},
		{kind: Git, raw: "https://github.com/org/repo.git/", want: "github.com/org/repo"},
		{kind: Git, raw: "HTTPS://GitHub.COM/org/repo", want: "github.com/org/repo"},
		{kind: Git, raw: "https://github.com:443/org/repo", want: "github.com/org/repo"},
		{kind: Git, raw: "https://token@github.com/org/repo?x=1#frag", want: "github.com/org/repo"},
		{kind: Git, raw: "  https://github.com//org//repo  ", want: "github.com/org/repo"},
		{kind: Git, raw: "ssh://git@github.com/org/repo.git", want: "github.com/org/repo"},
		{kind: Git, raw: "ssh://git@github.com:22/org/repo", want: "github.com/org/repo"},
		{kind: Git, raw: "git+ssh://git@github.com/org/repo", want: "github.com/org/repo"},
		{kind: Git, raw: "git@github.com:org/repo.git", want: "github.com/org/repo"},
		{kind: Git, raw: "git@github.com:/org/repo", want: "github.com/org/repo"},
		{kind: Git, raw: "github.com:org/repo", want: "github.com/org/repo"},
		{kind: Git, raw: "git://github.com:9418/org/repo", want: "github.com/org/repo"},
		{kind: Git, raw: "https://host/Org/Repo", want: "host/Org/Repo"}, // the path keeps its case
		{kind: Git, raw: "ssh://git@gitlab.example:2222/group/sub/repo.git", want: "gitlab.example:2222/group/sub/repo"},
		{kind: Git, raw: "https://gitlab.example:8443/group/repo", want: "gitlab.example:8443/group/repo"},
		{kind: Git, raw: "http://127.0.0.1:41234/apps.git", want: "127.0.0.1:41234/apps"},
		{kind: Git, raw: "http://[::1]:41234/apps.git", want: "[::1]:41234/apps"},
		{kind: Git, raw: "https://[::1]/apps", want: "[::1]/apps"},
		{kind: Git, raw: "git@[::1]:apps", want: "[::1]/apps"},
		{kind: Git, raw: "", err: "empty URL"},
		{kind: Git, raw: "https://github.com/", err: "no path"},
		{kind: Git, raw: "https://github.com/.git", err: "no path"},
		{kind: Git, raw: "oci://ghcr.io/org/repo", err: `scheme "oci"`},
		{kind: Git, raw: "org/repo", err: "neither SCHEME://HOST/PATH nor [USER@]HOST:PATH"},
		{kind: Git, raw: "git@:org/repo", err: "no host"},
		{kind: OCI, raw: "oci://ghcr.io/org/charts/web", want: "ghcr.io/org/charts/web"},
		{kind: OCI, raw: "oci://GHCR.io:443/org/charts/web/", want: "ghcr.io/org/charts/web"},
		{kind: OCI, raw: "ghcr.io/org/charts/web", want: "ghcr.io/org/charts/web"},
		{kind: OCI, raw: "oci://localhost:5000/charts/web", want: "localhost:5000/charts/web"},
		{kind: OCI, raw: "oci://ghcr.io/org/web.git", want: "ghcr.io/org/web.git"},
		{kind: OCI, raw: "ssh://ghcr.io/org/web", err: `scheme "ssh"`},
		{kind: OCI, raw: "oci://ghcr.io", err: "no path"},
		{kind: Helm, raw: "https://charts.example/stable/", want: "charts.example/stable"},
		{kind: Helm, raw: "https://charts.example/stable/index.yaml", want: "charts.example/stable"},
		{kind: Helm, raw: "https://charts.example/stable/myindex.yaml", want: "charts.example/stable/myindex.yaml"},
		{kind: Helm, raw: "https://Charts.Example", want: "charts.example"},
		{kind: Helm, raw: "http://charts.example:80/", want: "charts.example"},
		{kind: Helm, raw: "oci://charts.example/x", err: `scheme "oci"`},
		{kind: Helm, raw: "charts.example/stable", err: "no scheme"},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind)+" "+tt.raw, func(t *testing.T) {
			got, err := Normalize(tt.kind, tt.raw)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMatcher(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		kind    Kind
		url     string
		match   bool
	}{
		{"ssh against https", "ssh://git@github.com/org/repo.git", Git, "https://github.com/org/repo", true},
		{"scp-like against https", "git@github.com:org/repo", Git, "https://github.com/org/repo.git", true},
		{"https against scp-like", "https://github.com/org/repo/", Git, "ssh://git@github.com:22/org/repo", true},
		{"host case", "https://GITHUB.com/org/repo", Git, "https://github.com/org/repo", true},
		{"another repository", "https://github.com/org/repo", Git, "https://github.com/org/repo2", false},
		{"another host", "https://github.com/org/repo", Git, "https://gitlab.com/org/repo", false},
		{"another port", "ssh://git@host:2222/org/repo", Git, "ssh://git@host/org/repo", false},
		{"path case", "https://github.com/Org/Repo", Git, "https://github.com/org/repo", false},
		{"a source URL that does not parse", "https://github.com/org/repo", Git, "::", false},
		{"OCI", "oci://ghcr.io/org/charts/web", OCI, "oci://GHCR.IO/org/charts/web/", true},
		{"OCI without a scheme", "ghcr.io/org/charts/web", OCI, "oci://ghcr.io/org/charts/web", true},
		{"OCI another repository", "oci://ghcr.io/org/charts/web", OCI, "oci://ghcr.io/org/charts/api", false},
		{"an OCI pattern against Git", "oci://ghcr.io/org/charts/web", Git, "https://ghcr.io/org/charts/web", false},
		{"Helm", "https://charts.example/stable", Helm, "https://charts.example/stable/", true},
		{"Helm index", "https://charts.example/stable/index.yaml", Helm, "https://charts.example/stable", true},
		{"a scp-like pattern against Helm", "git@charts.example:stable", Helm, "https://charts.example/stable", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewMatcher(tt.pattern)
			require.NoError(t, err)
			assert.Equal(t, tt.match, m.Match(tt.kind, tt.url))
			assert.Equal(t, tt.pattern, m.String())
		})
	}
}

func TestNewMatcherRefuses(t *testing.T) {
	for _, raw := range []string{"", "   ", "file:///srv/repo", "no-host-no-path"} {
		_, err := NewMatcher(raw)
		assert.Error(t, err, raw)
	}
}

func TestMatchSource(t *testing.T) {
	m, err := NewMatcher("git@git.example:apps/monorepo.git")
	require.NoError(t, err)
	tests := []struct {
		name  string
		src   convoyv1alpha1.ReleaseSource
		kind  Kind
		match bool
	}{
		{"git", convoyv1alpha1.ReleaseSource{Git: &convoyv1alpha1.GitRepositorySource{URL: "https://git.example/apps/monorepo"}}, Git, true},
		{"another git", convoyv1alpha1.ReleaseSource{Git: &convoyv1alpha1.GitRepositorySource{URL: "https://git.example/apps/other"}}, Git, false},
		{"oci", convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: "oci://git.example/apps/monorepo"}}, OCI, false},
		{"helm", convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{URL: "https://git.example/apps/monorepo"}}, Helm, false},
		{"configMap", convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "web"}}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.match, m.MatchSource(tt.src))
			kind, _, ok := Of(tt.src)
			assert.Equal(t, tt.kind, kind)
			assert.Equal(t, tt.kind != "", ok)
		})
	}
}
