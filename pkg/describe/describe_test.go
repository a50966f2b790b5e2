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
	// An OCI artifact asked for by digest (a values bundle pinned so).
	assert.Equal(t, "oci://r/values@sha256:11", Resolved(&subresourcesv1alpha1.ResolvedSource{Kind: "OCIRepository", URL: "oci://r/values", Digest: "sha256:11"}))
}

// The signature a source was verified with: cosign as before, Git and
// Helm with their format, signer, key id and layout, and the tag's
// signature after the commit's for a Git source verified in mode TagAndHEAD.
func TestResolvedSignature(t *testing.T) {
	const (
		commit = "0123456789abcdef0123456789abcdef01234567"
		fpr    = "4F1A9C3E5B7D2A6E8C0B1D3F5A7C9E2B4D6F8A0C"
		sshFpr = "SHA256:uN8mYz3V5qk2b7d6Zr0cXl9wQe1tPa4sHj8fGi2oKmE"
	)
	git := subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://g/a.git", Ref: "refs/heads/main", Commit: commit}
	tag := subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://g/a.git", Ref: "refs/tags/v1.2.0", Commit: commit}
	chart := subresourcesv1alpha1.ResolvedSource{Kind: "HelmRepository", URL: "https://charts.example", Chart: "web", Version: "1.2.3", Digest: "sha256:00"}
	oci := subresourcesv1alpha1.ResolvedSource{Kind: "OCIRepository", URL: "oci://r/a", Tag: "v1", Digest: "sha256:00"}
	with := func(r subresourcesv1alpha1.ResolvedSource, v, vt *subresourcesv1alpha1.SourceSignature) *subresourcesv1alpha1.ResolvedSource {
		r.Verified, r.VerifiedTag = v, vt
		return &r
	}
	commitPGP := &subresourcesv1alpha1.SourceSignature{Provider: "git", Format: "openpgp", Key: "release.asc", Fingerprint: fpr, KeyID: "8C0B1D3F5A7C9E2B", Identity: "Jane Doe <jane@example.com>", Layout: "commit"}
	tagPGP := &subresourcesv1alpha1.SourceSignature{Provider: "git", Format: "openpgp", Key: "release.asc", Fingerprint: fpr, KeyID: "8C0B1D3F5A7C9E2B", Identity: "Jane Doe <jane@example.com>", Layout: "tag"}
	for _, tc := range []struct {
		name string
		r    *subresourcesv1alpha1.ResolvedSource
		want string
	}{
		{"unsigned", with(git, nil, nil), "https://g/a.git refs/heads/main (commit " + commit + ")"},
		{"cosign key", with(oci, &subresourcesv1alpha1.SourceSignature{Provider: "cosign", Key: "cosign.pub", Fingerprint: "sha256:ab", Layout: "tag"}, nil),
			"oci://r/a:v1 (sha256:00), signed: cosign key cosign.pub (sha256:ab, tag)"},
		{"cosign keyless", with(oci, &subresourcesv1alpha1.SourceSignature{Provider: "cosign", Subject: "https://github.com/o/r/.github/workflows/release.yaml@refs/heads/main", Issuer: "https://token.actions.githubusercontent.com", Layout: "referrer"}, nil),
			"oci://r/a:v1 (sha256:00), signed: cosign keyless by https://github.com/o/r/.github/workflows/release.yaml@refs/heads/main of issuer https://token.actions.githubusercontent.com (referrer)"},
		{"git commit, OpenPGP", with(git, commitPGP, nil),
			"https://g/a.git refs/heads/main (commit " + commit + "), signed: git openpgp key release.asc by Jane Doe <jane@example.com> (" + fpr + ", key id 8C0B1D3F5A7C9E2B, commit)"},
		{"git commit, SSH key in a .pub key", with(git, &subresourcesv1alpha1.SourceSignature{Provider: "git", Format: "ssh", Key: "ci.pub", Fingerprint: sshFpr, Layout: "commit"}, nil),
			"https://g/a.git refs/heads/main (commit " + commit + "), signed: git ssh key ci.pub (" + sshFpr + ", commit)"},
		{"git commit, SSH key in allowed_signers", with(git, &subresourcesv1alpha1.SourceSignature{Provider: "git", Format: "ssh", Key: "allowed_signers", Fingerprint: sshFpr, Identity: "ci@example.com", Layout: "commit"}, nil),
			"https://g/a.git refs/heads/main (commit " + commit + "), signed: git ssh key allowed_signers by ci@example.com (" + sshFpr + ", commit)"},
		{"git tag (mode Tag)", with(tag, tagPGP, nil),
			"https://g/a.git refs/tags/v1.2.0 (commit " + commit + "), signed: git openpgp key release.asc by Jane Doe <jane@example.com> (" + fpr + ", key id 8C0B1D3F5A7C9E2B, tag)"},
		{"git commit and tag (mode TagAndHEAD)", with(tag, commitPGP, tagPGP),
			"https://g/a.git refs/tags/v1.2.0 (commit " + commit + "), signed: git openpgp key release.asc by Jane Doe <jane@example.com> (" + fpr + ", key id 8C0B1D3F5A7C9E2B, commit)" +
				", tag signed: git openpgp key release.asc by Jane Doe <jane@example.com> (" + fpr + ", key id 8C0B1D3F5A7C9E2B, tag)"},
		{"helm provenance", with(chart, &subresourcesv1alpha1.SourceSignature{Provider: "helm", Format: "openpgp", Key: "charts.asc", Fingerprint: fpr, KeyID: "8C0B1D3F5A7C9E2B", Identity: "Charts <charts@example.com>", Layout: "prov"}, nil),
			"web 1.2.3 (sha256:00), signed: helm openpgp key charts.asc by Charts <charts@example.com> (" + fpr + ", key id 8C0B1D3F5A7C9E2B, prov)"},
		{"a provider of a newer server, fields missing", with(git, &subresourcesv1alpha1.SourceSignature{Provider: "sigstore-git"}, nil),
			"https://g/a.git refs/heads/main (commit " + commit + "), signed: sigstore-git"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Resolved(tc.r))
		})
	}
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
		{&convoyv1alpha1.LastResolved{URL: "oci://r/values", Digest: "sha256:11223344556677889900", Time: at}, "sha256:112233445566", "oci://r/values (sha256:11223344556677889900), since 2026-12-04T10:00:00Z"},
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
