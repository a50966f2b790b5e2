package describe

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// The source of a Release and what it resolved to, for every kind.
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
		assert.Equal(t, tc.want, Source(&convoyv1alpha1.Release{Spec: convoyv1alpha1.ReleaseSpec{Source: tc.src}}))
	}
	assert.Equal(t, "https://g/a.git refs/heads/main (commit "+commit+")",
		Resolved(&subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://g/a.git", Ref: "refs/heads/main", Commit: commit}))
	assert.Equal(t, "https://g/a.git (commit "+commit+")",
		Resolved(&subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://g/a.git", Commit: commit}))
	assert.Equal(t, "oci://r/a:v1 (sha256:00)", Resolved(&subresourcesv1alpha1.ResolvedSource{URL: "oci://r/a", Tag: "v1", Digest: "sha256:00"}))
}

func TestRevisions(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		r           *convoyv1alpha1.LastResolved
		short, line string
	}{
		{&convoyv1alpha1.LastResolved{URL: "https://g/a.git", Ref: "refs/heads/main", Commit: "0123456789abcdef", Time: at}, "0123456789ab", "https://g/a.git refs/heads/main (commit 0123456789abcdef), since 2026-12-04T10:00:00Z"},
		{&convoyv1alpha1.LastResolved{URL: "oci://r/a", Tag: "v1", Digest: "sha256:00112233445566778899", Time: at}, "sha256:001122334455", "oci://r/a:v1 (sha256:00112233445566778899), since 2026-12-04T10:00:00Z"},
		{&convoyv1alpha1.LastResolved{URL: "https://h", Chart: "web", Version: "1.2.3", Digest: "sha256:00", Time: at}, "sha256:00", "https://h web 1.2.3 (sha256:00), since 2026-12-04T10:00:00Z"},
	} {
		assert.Equal(t, tc.short, ShortRevision(tc.r))
		assert.Equal(t, tc.line, LastResolved(tc.r))
	}
	assert.Empty(t, ShortRevision(nil))
}

// Each reason a change has no owner reads as a sentence.
func TestUnattributed(t *testing.T) {
	tests := map[subresourcesv1alpha1.Unattributed]string{
		subresourcesv1alpha1.UnattributedNoManager: "no manager but convoy's owns it: the render changed since it was applied, or an admission webhook or a client that records no managedFields changed it",
		subresourcesv1alpha1.UnattributedUnowned:   "no manager owns it: a client that records no managedFields (or reset them), or an admission webhook, changed it",
		subresourcesv1alpha1.UnattributedRemoved:   "removed from the live object: managedFields does not record who removes a field",
		"":                                         "",
		"Sideways":                                 "no manager recorded it (Sideways)",
	}
	for u, want := range tests {
		assert.Equal(t, want, Unattributed(u), "%q", u)
	}
}

func TestManager(t *testing.T) {
	assert.Equal(t, "kubectl (scale)", Manager("kubectl", "scale"))
	assert.Equal(t, "helm", Manager("helm", ""))
}
