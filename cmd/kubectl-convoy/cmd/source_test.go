package cmd

import (
	"testing"

	"github.com/stretchr/testify/assert"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// The source of a Release and what it resolved to, as release get prints
// them, for every kind.
func TestSourceAndResolved(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		src  convoyv1alpha1.ReleaseSource
		want string
	}{
		{convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "m"}}, "ConfigMap m"},
		{convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: "oci://r/a", Tag: "v1"}}, "OCI oci://r/a:v1"},
		{convoyv1alpha1.ReleaseSource{Git: &convoyv1alpha1.GitRepositorySource{URL: "https://g/a.git", Ref: convoyv1alpha1.GitReference{Branch: "main"}}}, "Git https://g/a.git branch main"},
		{convoyv1alpha1.ReleaseSource{Git: &convoyv1alpha1.GitRepositorySource{URL: "https://g/a.git", Ref: convoyv1alpha1.GitReference{SemVer: "~1.2"}}}, "Git https://g/a.git semver ~1.2"},
		{convoyv1alpha1.ReleaseSource{Git: &convoyv1alpha1.GitRepositorySource{URL: "https://g/a.git", Ref: convoyv1alpha1.GitReference{Tag: "v1"}}}, "Git https://g/a.git tag v1"},
		{convoyv1alpha1.ReleaseSource{Git: &convoyv1alpha1.GitRepositorySource{URL: "https://g/a.git", Ref: convoyv1alpha1.GitReference{Commit: commit, Branch: "main"}}}, "Git https://g/a.git commit " + commit + " (branch main)"},
	} {
		assert.Equal(t, tc.want, source(&convoyv1alpha1.Release{Spec: convoyv1alpha1.ReleaseSpec{Source: tc.src}}))
	}
	assert.Equal(t, "https://g/a.git refs/heads/main (commit "+commit+")",
		resolved(&subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://g/a.git", Ref: "refs/heads/main", Commit: commit}))
	assert.Equal(t, "https://g/a.git (commit "+commit+")",
		resolved(&subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://g/a.git", Commit: commit}))
	assert.Equal(t, "oci://r/a:v1 (sha256:00)", resolved(&subresourcesv1alpha1.ResolvedSource{URL: "oci://r/a", Tag: "v1", Digest: "sha256:00"}))
}
