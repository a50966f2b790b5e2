package source

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
)

// signedGit is a repository whose commits and tags are signed by git's own
// signing, and the keys that signed them.
type signedGit struct {
	*gitFixture
	// ci (SSH, ed25519), pgp (OpenPGP) and other (SSH, ecdsa) sign; pub
	// are their public keys, as the Secret holds them.
	ci, pgp, other *gitserver.Signing
	pub            map[string][]byte
}

// startSignedGit starts a repository and makes the keys that sign.
func startSignedGit(t *testing.T) *signedGit {
	t.Helper()
	g := &signedGit{gitFixture: startGit(t, gitserver.Options{}), pub: map[string][]byte{}}
	// gpg-agent's socket is in gpg's home: a short path.
	dir, err := os.MkdirTemp("", "gv")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	g.ci, g.pub["ci.pub"], err = gitserver.NewSSHSigning(dir, "ed25519")
	require.NoError(t, err)
	g.other, g.pub["other.pub"], err = gitserver.NewSSHSigning(dir, "ecdsa")
	require.NoError(t, err)
	g.pgp, g.pub["ci.asc"], err = gitserver.NewOpenPGPSigning(dir, "Convoy CI", "ci@convoy.invalid")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, g.pgp.Close()) })
	return g
}

// commitBy commits files on branch signed by s (nil: unsigned).
func (g *signedGit) commitBy(t *testing.T, s *gitserver.Signing, branch string, files map[string]string) string {
	t.Helper()
	g.repo.Signing = s
	defer func() { g.repo.Signing = nil }()
	return g.commit(t, branch, files)
}

// tagBy makes the annotated tag name of commit, signed by s (nil:
// unsigned).
func (g *signedGit) tagBy(t *testing.T, s *gitserver.Signing, name, commit string) {
	t.Helper()
	g.repo.Signing = s
	defer func() { g.repo.Signing = nil }()
	require.NoError(t, g.repo.AnnotatedTag(name, commit, "release "+name+"\n"))
}

// rawCommit writes the commit object data to the repository and points
// branch at it, as a forge that serves what it is given would.
func (g *signedGit) rawCommit(t *testing.T, branch, data string) string {
	t.Helper()
	cmd := exec.Command("git", "--git-dir", g.repo.Dir, "hash-object", "-t", "commit", "-w", "--stdin", "--literally")
	cmd.Stdin = strings.NewReader(data)
	out, err := cmd.Output()
	require.NoError(t, err)
	sha := strings.TrimSpace(string(out))
	require.NoError(t, g.repo.SetRef("refs/heads/"+branch, sha))
	return sha
}

// catFile is the content of the object sha of kind.
func (g *signedGit) catFile(t *testing.T, kind, sha string) string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", g.repo.Dir, "cat-file", kind, sha).Output()
	require.NoError(t, err)
	return string(out)
}

// verifiedGit is a Release of shop whose Git source asks for signatures
// by the keys of the Secret secret.
func verifiedGit(url string, ref convoyv1alpha1.GitReference, mode, secret string) *convoyv1alpha1.Release {
	return gitRelease(convoyv1alpha1.GitRepositorySource{URL: url, Ref: ref,
		Verify: &convoyv1alpha1.GitVerification{Mode: mode, SecretRef: convoyv1alpha1.LocalObjectReference{Name: secret}}})
}

// A Git source that asks for signatures is rendered only from a commit
// (and a tag) signed as its mode asks, by a key of its Secret, with
// OpenPGP or SSH signatures made by git; anything else is
// SignatureUnverified, whose message names the commit and what was found.
func TestGitVerify(t *testing.T) {
	g := startSignedGit(t)
	files := map[string]string{"cm.yaml": "kind: ConfigMap"}
	main := g.commitBy(t, g.ci, "main", files)
	g.tagBy(t, g.ci, "v1", main)
	pgp := g.commitBy(t, g.pgp, "pgp", files)
	g.tagBy(t, g.pgp, "v1-pgp", pgp)
	unsigned := g.commitBy(t, nil, "unsigned", files)
	g.tagBy(t, nil, "v1-unsigned", unsigned)
	require.NoError(t, g.repo.Tag("v1-light", main))
	// v9 names the signed tag object of v1, as one who may push but not
	// sign could.
	v1, err := exec.Command("git", "--git-dir", g.repo.Dir, "rev-parse", "refs/tags/v1").Output()
	require.NoError(t, err)
	require.NoError(t, g.repo.SetRef("refs/tags/v9", strings.TrimSpace(string(v1))))
	other := g.commitBy(t, g.other, "other", files)
	// The signature of main over another content.
	tampered := g.rawCommit(t, "tampered", strings.Replace(g.catFile(t, "commit", main), "\ncommit\n", "\ncommit, changed\n", 1))
	// A signature block of 10 MiB, and a Secret of 1,000 keys.
	huge := g.rawCommit(t, "huge", strings.Replace(g.catFile(t, "commit", unsigned), "\n\n",
		"\ngpgsig -----BEGIN SSH SIGNATURE-----\n"+strings.Repeat(" "+strings.Repeat("A", 70)+"\n", 10<<20/72)+" -----END SSH SIGNATURE-----\n\n", 1))
	many := map[string][]byte{}
	for i := range 1000 {
		many[fmt.Sprintf("k%d.pub", i)] = g.pub["ci.pub"]
	}
	inputs := inputsOf(
		secret("keys", corev1.SecretTypeOpaque, map[string][]byte{"ci.pub": g.pub["ci.pub"], "ci.asc": g.pub["ci.asc"]}),
		secret("many", corev1.SecretTypeOpaque, many),
	)
	branch := func(name string) convoyv1alpha1.GitReference { return convoyv1alpha1.GitReference{Branch: name} }
	tag := func(name string) convoyv1alpha1.GitReference { return convoyv1alpha1.GitReference{Tag: name} }
	sshSig := func(layout string) *subresourcesv1alpha1.SourceSignature {
		return &subresourcesv1alpha1.SourceSignature{Provider: "git", Format: "ssh", Key: "ci.pub", Fingerprint: fingerprintOf(t, g.pub["ci.pub"]), Layout: layout}
	}
	for _, tc := range []struct {
		name      string
		ref       convoyv1alpha1.GitReference
		mode      string
		secret    string
		commit    string
		verified  *subresourcesv1alpha1.SourceSignature
		tagSig    *subresourcesv1alpha1.SourceSignature
		openpgp   bool
		unverfied string
	}{
		{name: "HEAD signed (SSH)", ref: branch("main"), commit: main, verified: sshSig("commit")},
		{name: "HEAD signed (OpenPGP)", ref: branch("pgp"), commit: pgp, openpgp: true},
		{name: "Tag signed", ref: tag("v1"), mode: "Tag", commit: main, verified: sshSig("tag")},
		{name: "TagAndHEAD signed", ref: tag("v1"), mode: "TagAndHEAD", commit: main, verified: sshSig("commit"), tagSig: sshSig("tag")},
		{name: "HEAD unsigned", ref: branch("unsigned"), commit: unsigned, unverfied: "commit " + unsigned + " is not signed"},
		{name: "HEAD by an unknown key", ref: branch("other"), commit: other, unverfied: "is signed by the SSH key " + fingerprintOf(t, g.pub["other.pub"])},
		{name: "HEAD tampered", ref: branch("tampered"), commit: tampered, unverfied: "does not verify its content"},
		{name: "Tag unsigned", ref: tag("v1-unsigned"), mode: "Tag", commit: unsigned, unverfied: "tag v1-unsigned"},
		{name: "Tag of a lightweight tag", ref: tag("v1-light"), mode: "Tag", commit: main, unverfied: "a lightweight tag, not an annotated tag"},
		{name: "Tag of another tag's object", ref: convoyv1alpha1.GitReference{SemVer: ">=1.0.0"}, mode: "Tag", commit: main, unverfied: `of the tag "v1", not of the tag "v9"`},
		{name: "Tag of a branch", ref: branch("main"), mode: "Tag", commit: main, unverfied: "not an annotated tag"},
		{name: "TagAndHEAD, the tag signed, the commit not", ref: tag("v1-unsigned"), mode: "TagAndHEAD", commit: unsigned, unverfied: "is not signed"},
		{name: "no Secret", ref: branch("main"), secret: "missing", commit: main, unverfied: "not found"},
		{name: "a signature block of 10 MiB", ref: branch("huge"), commit: huge, unverfied: "more than the limit of"},
		{name: "1,000 keys", ref: branch("main"), secret: "many", commit: main, unverfied: "more than the limit of 256 keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.secret == "" {
				tc.secret = "keys"
			}
			f, _ := newFetcher(t)
			release := verifiedGit(g.url, tc.ref, tc.mode, tc.secret)
			if tc.unverfied != "" {
				ferr := fetchErr(t, f, release, inputs, verify.ReasonSignatureUnverified)
				assert.Contains(t, ferr.Message, tc.unverfied)
				assert.Contains(t, ferr.Message, g.url+" refs/")
				assert.Contains(t, ferr.Message, "@"+tc.commit)
				return
			}
			src, err := f.Fetch(context.Background(), release, inputs)
			require.NoError(t, err)
			assert.Equal(t, tc.commit, src.Resolved.Commit)
			assert.Equal(t, []string{"cm.yaml"}, fileNames(src))
			if tc.openpgp {
				v := src.Resolved.Verified
				require.NotNil(t, v)
				assert.Equal(t, "openpgp", v.Format)
				assert.Equal(t, "ci.asc", v.Key)
				assert.Equal(t, "Convoy CI <ci@convoy.invalid>", v.Identity)
				assert.Len(t, v.Fingerprint, 40)
				assert.Len(t, v.KeyID, 16)
				assert.Equal(t, "commit", v.Layout)
				return
			}
			assert.Equal(t, tc.verified, src.Resolved.Verified)
			assert.Equal(t, tc.tagSig, src.Resolved.VerifiedTag)
		})
	}
}

// fingerprintOf is the SHA256 fingerprint of the authorized_keys line pub,
// as ssh-keygen -l prints it.
func fingerprintOf(t *testing.T, pub []byte) string {
	t.Helper()
	cmd := exec.Command("ssh-keygen", "-l", "-f", "-")
	cmd.Stdin = strings.NewReader(string(pub))
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.Fields(string(out))[1]
}

// The commit verified is the one rendered: a branch moved to an unsigned
// commit is refused at the next resolve. A commit in the content cache
// is verified with the key Secret of each Release that reads it, with the
// objects kept with its files (no refetch), and a tag mode whose cached
// commit was fetched for another ref fetches it again for its tag.
func TestGitVerifyCachedCommit(t *testing.T) {
	g := startSignedGit(t)
	main := g.commitBy(t, g.ci, "main", map[string]string{"cm.yaml": "kind: ConfigMap"})
	g.tagBy(t, g.ci, "v1", main)
	inputs := inputsOf(
		secret("keys", corev1.SecretTypeOpaque, map[string][]byte{"ci.pub": g.pub["ci.pub"]}),
		secret("same", corev1.SecretTypeOpaque, map[string][]byte{"release.pub": g.pub["ci.pub"]}),
		secret("others", corev1.SecretTypeOpaque, map[string][]byte{"other.pub": g.pub["other.pub"]}),
	)
	f, clk := newFetcher(t)
	ctx := context.Background()
	src, err := f.Fetch(ctx, verifiedGit(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "", "keys"), inputs)
	require.NoError(t, err)
	assert.Equal(t, "ci.pub", src.Resolved.Verified.Key)
	fetches := g.server.Fetches()

	src, err = f.Fetch(ctx, verifiedGit(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "", "same"), inputs)
	require.NoError(t, err)
	assert.Equal(t, "release.pub", src.Resolved.Verified.Key, "verified with this Release's Secret")
	ferr := fetchErr(t, f, verifiedGit(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "", "others"), inputs, verify.ReasonSignatureUnverified)
	assert.Contains(t, ferr.Message, "which is not in the key Secret")
	assert.Equal(t, fetches, g.server.Fetches(), "served from the content cache, objects and all")

	// The cached commit was fetched for main: its tag v1 is fetched.
	src, err = f.Fetch(ctx, verifiedGit(g.url, convoyv1alpha1.GitReference{Tag: "v1"}, "Tag", "keys"), inputs)
	require.NoError(t, err)
	assert.Equal(t, "tag", src.Resolved.Verified.Layout)
	assert.Greater(t, g.server.Fetches(), fetches, "fetched again for the tag")
	fetches = g.server.Fetches()
	_, err = f.Fetch(ctx, verifiedGit(g.url, convoyv1alpha1.GitReference{Tag: "v1"}, "TagAndHEAD", "same"), inputs)
	require.NoError(t, err)
	assert.Equal(t, fetches, g.server.Fetches(), "the tag kept with the commit")

	moved := g.commitBy(t, nil, "main", map[string]string{"cm.yaml": "kind: ConfigMap\n# moved"})
	clk.SetTime(clk.Now().Add(DefaultResolveMaxAge + time.Second))
	ferr = fetchErr(t, f, verifiedGit(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "", "keys"), inputs, verify.ReasonSignatureUnverified)
	assert.Contains(t, ferr.Message, "commit "+moved+" is not signed")
}

// A stored render's commit is verified under the Release's verify now:
// its commit, and for the tag modes its ref's tag, which must still name
// it; a revision of another source, or none, is refused.
func TestGitVerifyRevision(t *testing.T) {
	g := startSignedGit(t)
	first := g.commitBy(t, g.ci, "main", map[string]string{"cm.yaml": "kind: ConfigMap"})
	g.tagBy(t, g.ci, "v1", first)
	second := g.commitBy(t, g.ci, "main", map[string]string{"cm.yaml": "kind: ConfigMap\n# 2"})
	// The tag moved to second since the render was stored from first.
	g.tagBy(t, g.ci, "v2", second)
	unsigned := g.commitBy(t, nil, "unsigned", map[string]string{"cm.yaml": "kind: ConfigMap"})
	inputs := inputsOf(secret("keys", corev1.SecretTypeOpaque, map[string][]byte{"ci.pub": g.pub["ci.pub"]}))
	f, _ := newFetcher(t)
	ctx := context.Background()
	stored := func(ref, commit string) *subresourcesv1alpha1.ResolvedSource {
		return &subresourcesv1alpha1.ResolvedSource{Kind: KindGitRepository, URL: g.url, Ref: ref, Commit: commit}
	}
	head := verifiedGit(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "", "keys")
	sig, err := f.VerifyRevision(ctx, head, inputs, stored("refs/heads/main", first))
	require.NoError(t, err, "a commit behind the tip")
	require.NotNil(t, sig)
	require.NotNil(t, sig.Verified)
	assert.Equal(t, "commit", sig.Verified.Layout)
	assert.Nil(t, sig.VerifiedTag, "mode HEAD verifies no tag")
	assert.Equal(t, first, sig.Commit, "the stored revision, with its signatures")
	// TagAndHEAD: the stored render carries the tag's signature too.
	sig, err = f.VerifyRevision(ctx, verifiedGit(g.url, convoyv1alpha1.GitReference{Tag: "v1"}, "TagAndHEAD", "keys"), inputs, stored("refs/tags/v1", first))
	require.NoError(t, err)
	require.NotNil(t, sig.Verified)
	assert.Equal(t, "commit", sig.Verified.Layout)
	require.NotNil(t, sig.VerifiedTag, "the tag's signature")
	assert.Equal(t, "tag", sig.VerifiedTag.Layout)

	tagAndHead := verifiedGit(g.url, convoyv1alpha1.GitReference{Tag: "v2"}, "TagAndHEAD", "keys")
	for _, tc := range []struct {
		name     string
		release  *convoyv1alpha1.Release
		resolved *subresourcesv1alpha1.ResolvedSource
		says     string
	}{
		{"no revision", head, nil, "names no revision"},
		{"another repository", head, &subresourcesv1alpha1.ResolvedSource{Kind: KindGitRepository, URL: g.url + "x", Commit: first}, "not from the Release's source"},
		{"an OCI digest", head, &subresourcesv1alpha1.ResolvedSource{Kind: KindOCIRepository, URL: g.url, Digest: "sha256:" + strings.Repeat("a", 64)}, "not from the Release's source"},
		{"no commit", head, stored("refs/heads/main", ""), "not a commit hash"},
		{"unsigned", head, stored("refs/heads/unsigned", unsigned), "commit " + unsigned + " is not signed"},
		{"the tag on another commit", tagAndHead, stored("refs/tags/v2", first), "names the commit " + second + ", not the commit " + first},
		{"the tag gone", tagAndHead, stored("refs/tags/v0", first), "has no ref refs/tags/v0 any more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.VerifyRevision(ctx, tc.release, inputs, tc.resolved)
			ferr, ok := failure.As(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, verify.ReasonSignatureUnverified, ferr.Reason)
			assert.Contains(t, ferr.Message, tc.says)
		})
	}
}

// A stored render's values revision is verified under spec.valuesSource's
// verify now, as a stored render's source revision is under spec.source's
// (VerifyValuesRevision): a signed commit passes with its signature; none,
// another repository's, or an unsigned commit is SignatureUnverified and
// says spec.valuesSource.
func TestGitVerifyValuesRevision(t *testing.T) {
	g := startSignedGit(t)
	signed := g.commitBy(t, g.ci, "main", map[string]string{"prod.yaml": "replicas: 2\n"})
	unsigned := g.commitBy(t, nil, "unsigned", map[string]string{"prod.yaml": "replicas: 9\n"})
	inputs := inputsOf(secret("keys", corev1.SecretTypeOpaque, map[string][]byte{"ci.pub": g.pub["ci.pub"]}))
	f, _ := newFetcher(t)
	ctx := context.Background()
	// Its spec.source asks for no signature; its values source does.
	release := verifiedGit(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "", "keys")
	release.Spec.ValuesSource = &convoyv1alpha1.ValuesSource{Git: release.Spec.Source.Git}
	release.Spec.Source = convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "chart"}}
	stored := func(url, ref, commit string) *subresourcesv1alpha1.ResolvedSource {
		return &subresourcesv1alpha1.ResolvedSource{Kind: KindGitRepository, URL: url, Ref: ref, Commit: commit}
	}

	sig, err := f.VerifyRevision(ctx, release, inputs, nil)
	require.NoError(t, err, "spec.source asks for no signature")
	assert.Nil(t, sig)
	sig, err = f.VerifyValuesRevision(ctx, release, inputs, stored(g.url, "refs/heads/main", signed))
	require.NoError(t, err)
	require.NotNil(t, sig)
	require.NotNil(t, sig.Verified, "the signature the values commit verified with")
	assert.Equal(t, "commit", sig.Verified.Layout)

	unverified := release.DeepCopy()
	unverified.Spec.ValuesSource.Git.Verify = nil
	sig, err = f.VerifyValuesRevision(ctx, unverified, inputs, nil)
	require.NoError(t, err, "a values source that asks for no signature")
	assert.Nil(t, sig)

	for _, tc := range []struct {
		name     string
		resolved *subresourcesv1alpha1.ResolvedSource
		says     string
	}{
		{"no values revision", nil, "names no revision of it (the annotation " + convoyv1alpha1.AnnotationResolvedValuesSource},
		{"another repository", stored(g.url+"x", "refs/heads/main", signed), "not from the Release's source"},
		{"an unsigned commit", stored(g.url, "refs/heads/unsigned", unsigned), "commit " + unsigned + " is not signed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig, err := f.VerifyValuesRevision(ctx, release, inputs, tc.resolved)
			assert.Nil(t, sig)
			ferr, ok := failure.As(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, verify.ReasonSignatureUnverified, ferr.Reason)
			assert.True(t, strings.HasPrefix(ferr.Message, "spec.valuesSource"), ferr.Message)
			assert.Contains(t, ferr.Message, tc.says)
		})
	}
}
