package revision

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/git"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

func TestWithAndFrom(t *testing.T) {
	ctx := context.Background()
	assert.Empty(t, From(ctx))
	assert.Equal(t, ctx, With(ctx, ""), "no revision: the context as it is")
	assert.Equal(t, "refs/pull/1/head", From(With(ctx, "refs/pull/1/head")))
}

func TestGitRevision(t *testing.T) {
	const (
		main   = "1111111111111111111111111111111111111111"
		pr     = "2222222222222222222222222222222222222222"
		tagged = "3333333333333333333333333333333333333333"
		older  = "4444444444444444444444444444444444444444"
	)
	refs := git.Refs{
		"refs/heads/main":            main,
		"refs/heads/feature":         pr,
		"refs/pull/7/head":           pr,
		"refs/tags/v1.0.0":           tagged,
		"refs/heads/v1.0.0":          main, // a branch named as a tag: the tag wins, as in git
		"refs/heads/only":            older,
		"refs/merge-requests/3/head": older,
	}
	tests := []struct {
		name       string
		rev        string
		own        convoyv1alpha1.GitReference
		wantRef    string
		wantCommit string
		wantTip    bool
		wantErr    string
	}{
		{name: "a branch", rev: "feature", wantRef: "refs/heads/feature", wantCommit: pr, wantTip: true},
		{name: "a tag before a branch of that name", rev: "v1.0.0", wantRef: "refs/tags/v1.0.0", wantCommit: tagged, wantTip: true},
		{name: "a pull request's ref", rev: "refs/pull/7/head", wantRef: "refs/pull/7/head", wantCommit: pr, wantTip: true},
		{name: "a commit at a tip: fetched from the first ref of it, depth 1", rev: strings.ToUpper(pr), wantRef: "refs/heads/feature", wantCommit: pr, wantTip: true},
		{name: "a commit at no tip: the history of the Release's branch", rev: "5555555555555555555555555555555555555555",
			own: convoyv1alpha1.GitReference{Branch: "main"}, wantRef: "refs/heads/main", wantCommit: "5555555555555555555555555555555555555555"},
		{name: "a commit at no tip, no branch: by its hash", rev: "5555555555555555555555555555555555555555",
			own: convoyv1alpha1.GitReference{Tag: "v1.0.0"}, wantCommit: "5555555555555555555555555555555555555555"},
		{name: "no such name", rev: "nope", wantErr: `revision "nope" is no commit hash, ref, tag or branch of the repository`},
		{name: "no such ref", rev: "refs/pull/8/head", wantErr: `revision "refs/pull/8/head": the repository has no ref refs/pull/8/head`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Git("https://git.example/app", tt.rev, tt.own, refs)
			if tt.wantErr != "" {
				require.Error(t, err)
				f, ok := failure.As(err)
				require.True(t, ok)
				assert.Equal(t, sourcefailure.ReasonArtifactNotFound, f.Reason)
				assert.Contains(t, f.Message, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantRef, r.Ref)
			assert.Equal(t, tt.wantCommit, r.Commit)
			assert.Equal(t, tt.wantTip, r.Tip)
		})
	}
}

func TestAtRevision(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	oci := convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: "oci://registry.example/app", Tag: "1.0", Verify: &convoyv1alpha1.OCIVerification{}}}
	helm := convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{URL: "https://charts.example", Chart: "web", Version: "~1.2"}}
	gitSrc := convoyv1alpha1.ReleaseSource{Git: &convoyv1alpha1.GitRepositorySource{URL: "https://git.example/app", Ref: convoyv1alpha1.GitReference{Branch: "main"}}}
	configMap := convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "web"}}
	tests := []struct {
		name    string
		src     convoyv1alpha1.ReleaseSource
		rev     string
		check   func(t *testing.T, got convoyv1alpha1.ReleaseSource)
		wantErr string
	}{
		{name: "no revision", src: oci, wantErr: "is not a revision"},
		{name: "an OCI tag", src: oci, rev: "pr-7", check: func(t *testing.T, got convoyv1alpha1.ReleaseSource) {
			assert.Equal(t, "pr-7", got.OCIRepository.Tag)
			assert.Empty(t, got.OCIRepository.Digest)
			assert.NotNil(t, got.OCIRepository.Verify, "verified as the Release asks")
		}},
		{name: "an OCI digest", src: oci, rev: digest, check: func(t *testing.T, got convoyv1alpha1.ReleaseSource) {
			assert.Equal(t, digest, got.OCIRepository.Digest)
			assert.Empty(t, got.OCIRepository.Tag)
		}},
		{name: "an OCI revision that is neither", src: oci, rev: "a/b", wantErr: "is neither an OCI tag nor a digest"},
		{name: "a chart version, exactly", src: helm, rev: "1.3.0", check: func(t *testing.T, got convoyv1alpha1.ReleaseSource) {
			assert.Equal(t, "=1.3.0", got.HelmRepository.Version)
		}},
		{name: "a chart version range is no revision", src: helm, rev: ">=1.0", wantErr: "is not a chart version"},
		{name: "Git: resolved with the listing", src: gitSrc, rev: "main", check: func(t *testing.T, got convoyv1alpha1.ReleaseSource) { assert.Equal(t, "main", got.Git.Ref.Branch) }},
		{name: "a ConfigMap has none", src: configMap, rev: "main", wantErr: "a ConfigMap source has no revisions"},
		{name: "white space", src: gitSrc, rev: "main x", wantErr: "is not a revision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Source(tt.src, tt.rev)
			if tt.wantErr != "" {
				require.Error(t, err)
				f, ok := failure.As(err)
				require.True(t, ok)
				assert.Equal(t, sourcefailure.ReasonSourceInvalid, f.Reason)
				assert.Contains(t, f.Message, tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, got)
		})
	}
	// The Release's own source is never changed.
	assert.Equal(t, "1.0", oci.OCIRepository.Tag)
	assert.Equal(t, "~1.2", helm.HelmRepository.Version)
}

func TestContent(t *testing.T) {
	for rev, want := range map[string]bool{
		"0123456789abcdef0123456789abcdef01234567":                                true,
		"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": true,
		"main":             false,
		"refs/pull/1/head": false,
		"v1.2.3":           false,
		"0123456789abcdef": false,
	} {
		assert.Equal(t, want, Content(rev), rev)
	}
}
