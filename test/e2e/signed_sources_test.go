package e2e

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/provenance"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
)

// newPGPKey is an OpenPGP key of name <email>, made in the test.
func newPGPKey(t *testing.T, name, email string) *openpgp.Entity {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", email, nil)
	require.NoError(t, err)
	return e
}

// armoredPublicKey is e's public key, armored as gpg --export --armor
// writes it.
func armoredPublicKey(t *testing.T, e *openpgp.Entity) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	require.NoError(t, err)
	require.NoError(t, e.Serialize(w))
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// provenanceOf is the .prov file helm package --sign writes for the chart
// archive of version, saved as filename, signed by e.
func provenanceOf(t *testing.T, e *openpgp.Entity, archive []byte, filename, version string) []byte {
	t.Helper()
	prov, err := (&provenance.Signatory{Entity: e}).ClearSign(archive, filename, []byte("apiVersion: v2\nname: web\nversion: "+version+"\n"))
	require.NoError(t, err)
	return []byte(prov)
}

// helmIndex is the index of the web chart versions served by repo.
func helmIndex(charts map[string][]byte) string {
	var entries []string
	for v, tgz := range charts {
		entries = append(entries, fmt.Sprintf("  - {name: web, version: %q, urls: [web-%s.tgz], digest: %s}", v, v, digestOf(tgz)))
	}
	return "apiVersion: v1\nentries:\n  web:\n" + strings.Join(entries, "\n") + "\n"
}

func withHelmVerify(secret string) releaseOption {
	return func(r *convoyv1alpha1.Release) {
		r.Spec.Source.HelmRepository.Verify = &convoyv1alpha1.HelmVerification{Provider: "helm", SecretRef: convoyv1alpha1.LocalObjectReference{Name: secret}}
	}
}

// A Helm repository chart signed as helm package --sign signs it is
// rendered, compared and InSync, its signer in /diff and in kubectl convoy
// release get. A new version published without its .prov, and a .prov that
// signs another archive's digest, are SignatureUnverified, never Drifted:
// nothing of those charts reaches /preview, /diff or the drift loop's
// compare.
func TestHelmProvenance(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	repo := startHelmRepository(t)
	bot := newPGPKey(t, "Release Bot", "bot@example.test")
	keysSecret(t, ns, "helm-keys", map[string][]byte{"release.asc": armoredPublicKey(t, bot)})

	charts := map[string][]byte{}
	for _, v := range []string{"1.0.0", "2.0.0", "3.0.0"} {
		charts[v], _ = webChart(t, v)
	}
	repo.put("web-1.0.0.tgz", charts["1.0.0"], "")
	repo.put("web-1.0.0.tgz.prov", provenanceOf(t, bot, charts["1.0.0"], "web-1.0.0.tgz", "1.0.0"), helmIndex(map[string][]byte{"1.0.0": charts["1.0.0"]}))
	newSourceRelease(t, ns, "web", convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{
		URL: repo.URL, Chart: "web", Version: ">=1.0.0 <3.0.0"}}, withHelmVerify("helm-keys"))
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	d := getDiff(t, ns, "web", "")
	require.NotNil(t, d.ResolvedSource)
	require.NotNil(t, d.ResolvedSource.Verified)
	sig := d.ResolvedSource.Verified
	assert.Equal(t, "helm", sig.Provider)
	assert.Equal(t, "openpgp", sig.Format)
	assert.Equal(t, "prov", sig.Layout)
	assert.Equal(t, "release.asc", sig.Key)
	assert.Equal(t, fmt.Sprintf("%X", bot.PrimaryKey.Fingerprint), sig.Fingerprint)
	assert.Equal(t, "Release Bot <bot@example.test>", sig.Identity)
	get := kubectlConvoy(t, "", "release", "get", "web", "-n", ns)
	require.Zero(t, get.code, "%s", get)
	assert.Contains(t, get.stdout, sig.Fingerprint)

	// 2.0.0 is published without its .prov: Undetermined, not Drifted.
	repo.put("web-2.0.0.tgz", charts["2.0.0"], helmIndex(map[string][]byte{"1.0.0": charts["1.0.0"], "2.0.0": charts["2.0.0"]}))
	assertUnverified(t, ns, "web", "web-2.0.0.tgz.prov")

	// In a repository of its own (the index of the first is kept for
	// --source-resolve-max-age), 3.0.0's .prov signs the archive of 1.0.0
	// under 3.0.0's name.
	other := startHelmRepository(t)
	other.put("web-3.0.0.tgz", charts["3.0.0"], helmIndex(map[string][]byte{"3.0.0": charts["3.0.0"]}))
	other.put("web-3.0.0.tgz.prov", provenanceOf(t, bot, charts["1.0.0"], "web-3.0.0.tgz", "3.0.0"), "")
	newSourceRelease(t, ns, "other-digest", convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{
		URL: other.URL, Chart: "web", Version: "3.0.0"}}, withHelmVerify("helm-keys"))
	assertUnverified(t, ns, "other-digest", "sha256:"+digestOf(charts["1.0.0"]))
}

// shortDir is a new directory of a short path (gpg-agent's socket is in
// gpg's home), removed after the test.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gv")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func withGitVerify(mode, secret string) releaseOption {
	return func(r *convoyv1alpha1.Release) {
		r.Spec.Source.Git.Verify = &convoyv1alpha1.GitVerification{Mode: mode, SecretRef: convoyv1alpha1.LocalObjectReference{Name: secret}}
	}
}

// Git commits signed as users sign them (git commit -S, with a gpg key
// and with an SSH key of ssh-keygen) are rendered, compared and InSync,
// the signer in /diff and in kubectl convoy release get; a branch moved to
// an unsigned commit is SignatureUnverified, never Drifted: nothing of
// that commit reaches /preview, /diff or the drift loop's compare. A
// signed annotated tag of a signed commit verifies in mode TagAndHEAD.
func TestSignedGitCommits(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	dir := shortDir(t)
	pgp, pgpPub, err := gitserver.NewOpenPGPSigning(dir, "Release Bot", "bot@example.test")
	require.NoError(t, err)
	t.Cleanup(func() { _ = pgp.Close() })
	sshSigning, sshPub, err := gitserver.NewSSHSigning(dir, "ed25519")
	require.NoError(t, err)
	keysSecret(t, ns, "git-keys", map[string][]byte{"bot.asc": pgpPub, "ci.pub": sshPub})

	for _, tc := range []struct {
		name    string
		signing *gitserver.Signing
		key     string
	}{
		{"openpgp", pgp, "bot.asc"},
		{"ssh", sshSigning, "ci.pub"},
	} {
		g := startGitRepo(t, gitserver.Options{})
		g.Signing = tc.signing
		signed := g.commit(t, "main", monorepo(t, "blue"))
		newSourceRelease(t, ns, tc.name, gitSource(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "charts/web"), withGitVerify("HEAD", "git-keys"))
		standIn.apply(ns, tc.name)
		waitInSync(t, ns, tc.name, metav1.ConditionTrue, "InSync")
		d := getDiff(t, ns, tc.name, "")
		require.NotNil(t, d.ResolvedSource, tc.name)
		assert.Equal(t, signed, d.ResolvedSource.Commit, tc.name)
		sig := d.ResolvedSource.Verified
		require.NotNil(t, sig, tc.name)
		assert.Equal(t, "git", sig.Provider, tc.name)
		assert.Equal(t, tc.signing.Format, sig.Format, tc.name)
		assert.Equal(t, tc.key, sig.Key, tc.name)
		assert.Equal(t, "commit", sig.Layout, tc.name)
		assert.NotEmpty(t, sig.Fingerprint, tc.name)
		get := kubectlConvoy(t, "", "release", "get", tc.name, "-n", ns)
		require.Zero(t, get.code, "%s", get)
		assert.Contains(t, get.stdout, sig.Fingerprint, tc.name)

		// The branch moves to a commit nobody signed.
		g.Signing = nil
		unsigned := g.commit(t, "main", monorepo(t, "green"))
		assertUnverified(t, ns, tc.name, "is not signed", unsigned)

		if tc.name != "ssh" {
			continue
		}
		// A signed annotated tag of a signed commit: TagAndHEAD.
		g.Signing = tc.signing
		tagged := g.commit(t, "release", monorepo(t, "yellow"))
		require.NoError(t, g.AnnotatedTag("v1.0.0", tagged, "release v1.0.0\n"))
		newSourceRelease(t, ns, "tagged", gitSource(g.url, convoyv1alpha1.GitReference{Tag: "v1.0.0"}, "charts/web"), withGitVerify("TagAndHEAD", "git-keys"))
		standIn.apply(ns, "tagged")
		waitInSync(t, ns, "tagged", metav1.ConditionTrue, "InSync")
		d = getDiff(t, ns, "tagged", "")
		require.NotNil(t, d.ResolvedSource.Verified)
		require.NotNil(t, d.ResolvedSource.VerifiedTag)
		assert.Equal(t, "commit", d.ResolvedSource.Verified.Layout)
		assert.Equal(t, "tag", d.ResolvedSource.VerifiedTag.Layout)
		assert.Equal(t, tagged, d.ResolvedSource.Commit)
	}
}
