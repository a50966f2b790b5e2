package e2e

import (
	"context"
	"crypto"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/cosigner"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
)

// signedBundle pushes a bundle of one ConfigMap NAME-cm to repo:tag and
// returns its digest.
func signedBundle(t *testing.T, reg *ociregistry.Server, repo, tag, color string) string {
	t.Helper()
	d, err := reg.PushBundle(context.Background(), repo, tag, map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + strings.ReplaceAll(repo, "/", "-") + "-cm}\ndata: {color: " + color + "}\n",
	})
	require.NoError(t, err)
	return d
}

type signLayout func(ctx context.Context, reg *ociregistry.Server, repo, digest string, key crypto.Signer) error

func signTag(ctx context.Context, reg *ociregistry.Server, repo, digest string, key crypto.Signer) error {
	ref, err := reg.Digest(repo, digest)
	if err != nil {
		return err
	}
	return cosigner.SignTag(ctx, ref, key, reg.ClientOptions(ctx)...)
}

func signReferrer(ctx context.Context, reg *ociregistry.Server, repo, digest string, key crypto.Signer) error {
	ref, err := reg.Digest(repo, digest)
	if err != nil {
		return err
	}
	return cosigner.SignReferrer(ctx, ref, key, reg.ClientOptions(ctx)...)
}

func withVerify(secret string) releaseOption {
	return func(r *convoyv1alpha1.Release) {
		r.Spec.Source.OCIRepository.Verify = &convoyv1alpha1.OCIVerification{Provider: "cosign", SecretRef: &convoyv1alpha1.LocalObjectReference{Name: secret}}
	}
}

func keysSecret(t *testing.T, ns, name string, keys map[string][]byte) {
	t.Helper()
	_, err := kubeClient(t).CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: keys}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// A bundle signed in each layout cosign writes (the sha256-HEX.sig tag, a
// Sigstore bundle as an OCI referrer) is rendered, compared and InSync, the
// signer in /diff and in kubectl convoy release get. An unsigned artifact,
// one signed by another key, a tag moved to an unsigned digest and a
// missing Secret are SignatureUnverified (or the Secret's reason), never
// Drifted: nothing of the artifact reaches /preview, /diff or the drift
// loop's compare.
func TestVerifiedSources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	reg := startTestRegistry(t, ociregistry.Options{})
	ci, ciPub, err := cosigner.GenerateKey()
	require.NoError(t, err)
	other, otherPub, err := cosigner.GenerateKey()
	require.NoError(t, err)
	keysSecret(t, ns, "ci-keys", map[string][]byte{"old.pub": otherPub, "ci.pub": ciPub, "README": []byte("not a key")})
	keysSecret(t, ns, "other-keys", map[string][]byte{"other.pub": otherPub})
	_ = other

	for _, tc := range []struct {
		layout string
		sign   signLayout
	}{{"tag", signTag}, {"referrer", signReferrer}} {
		repo := "apps/" + tc.layout
		d := signedBundle(t, reg, repo, "v1", "blue")
		require.NoError(t, tc.sign(ctx, reg, repo, d, ci))
		newSourceRelease(t, ns, tc.layout, ociSource(reg.URL(repo), "v1", ""), withVerify("ci-keys"))
		standIn.apply(ns, tc.layout)
		waitInSync(t, ns, tc.layout, metav1.ConditionTrue, "InSync")
		diff := getDiff(t, ns, tc.layout, "")
		require.NotNil(t, diff.ResolvedSource.Verified, tc.layout)
		assert.Equal(t, d, diff.ResolvedSource.Digest)
		assert.Equal(t, "cosign", diff.ResolvedSource.Verified.Provider)
		assert.Equal(t, "ci.pub", diff.ResolvedSource.Verified.Key, "the one of two keys that signed")
		assert.Equal(t, tc.layout, diff.ResolvedSource.Verified.Layout)
		assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, diff.ResolvedSource.Verified.Fingerprint)
		get := kubectlConvoy(t, "", "release", "get", tc.layout, "-n", ns)
		require.Zero(t, get.code, "%s", get)
		assert.Contains(t, get.stdout, "signed: cosign key ci.pub ("+diff.ResolvedSource.Verified.Fingerprint+", "+tc.layout+")")
	}

	// The tag moves to a digest nobody signed: Undetermined, not Drifted.
	signedBundle(t, reg, "apps/tag", "v1", "red")
	assertUnverified(t, ns, "tag", "no signature")

	unsigned := signedBundle(t, reg, "apps/unsigned", "v1", "green")
	newSourceRelease(t, ns, "unsigned", ociSource(reg.URL("apps/unsigned"), "v1", ""), withVerify("ci-keys"))
	assertUnverified(t, ns, "unsigned", "no signature", unsigned)

	wrong := signedBundle(t, reg, "apps/wrong", "v1", "green")
	require.NoError(t, signTag(ctx, reg, "apps/wrong", wrong, ci))
	newSourceRelease(t, ns, "wrong", ociSource(reg.URL("apps/wrong"), "v1", ""), withVerify("other-keys"))
	assertUnverified(t, ns, "wrong", "other.pub")

	newSourceRelease(t, ns, "no-secret", ociSource(reg.URL("apps/referrer"), "v1", ""), withVerify("absent"))
	assertUnverified(t, ns, "no-secret", "verify.secretRef Secret "+ns+"/absent not found")

	// A Release whose ServiceAccount may not read the Secret.
	bare := newBareNamespace(t)
	keysSecret(t, bare, "ci-keys", map[string][]byte{"ci.pub": ciPub})
	newSourceRelease(t, bare, "forbidden", ociSource(reg.URL("apps/referrer"), "v1", ""), withVerify("ci-keys"))
	// The identity's refusal comes first (drift's classifier): Forbidden,
	// naming the Secret.
	assertUndetermined(t, bare, "forbidden", failure.ReasonForbidden, "may not read an input of the release", "verify.secretRef Secret "+bare+"/ci-keys may not be read")
}

// assertUnverified waits for SignatureUnverified, and checks that nothing of
// the artifact is shown: /diff lists no object, /preview refuses.
func assertUnverified(t *testing.T, ns, name string, inMessage ...string) {
	t.Helper()
	assertUndetermined(t, ns, name, verify.ReasonSignatureUnverified, inMessage...)
	d := getDiff(t, ns, name, "")
	assert.Empty(t, d.Objects, "no object of an unverified artifact is compared")
	r := kubectl(t, "", "", "get", "--raw", previewPath(ns, name))
	require.Error(t, r.err, "preview of an unverified artifact: %s", r.stdout)
	assert.Contains(t, r.stderr, verify.ReasonSignatureUnverified)
	assert.NotContains(t, r.stdout, "-cm", "no object of the artifact in the answer")
}

const (
	ciIssuer  = "https://token.actions.githubusercontent.com"
	ciSubject = "https://github.com/kumodo/web/.github/workflows/release.yaml@refs/tags/v1"
)

func withKeyless(rootSecret, issuer, subject string) releaseOption {
	return func(r *convoyv1alpha1.Release) {
		r.Spec.Source.OCIRepository.Verify = &convoyv1alpha1.OCIVerification{Provider: "cosign",
			MatchOIDCIdentity:    []convoyv1alpha1.OIDCIdentityMatch{{Issuer: issuer, Subject: subject}},
			TrustedRootSecretRef: &convoyv1alpha1.LocalObjectReference{Name: rootSecret}}
	}
}

// A bundle signed keyless (a certificate of a Sigstore instance's
// authority, issued to a CI's identity, logged and timestamped), in each
// layout, is InSync with the identity expected and the instance's
// trusted_root.json in a Secret; the signer's issuer and subject are in
// /diff and kubectl convoy release get. Another identity, a trust root
// missing or of another instance are SignatureUnverified: Undetermined.
func TestKeylessVerifiedSources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	reg := startTestRegistry(t, ociregistry.Options{})
	ours, err := cosigner.NewSigstore()
	require.NoError(t, err)
	theirs, err := cosigner.NewSigstore()
	require.NoError(t, err)
	ourRoot, err := ours.TrustedRoot(cosigner.RootOptions{})
	require.NoError(t, err)
	theirRoot, err := theirs.TrustedRoot(cosigner.RootOptions{})
	require.NoError(t, err)
	keysSecret(t, ns, "sigstore", map[string][]byte{verify.TrustRootKey: ourRoot})
	keysSecret(t, ns, "other-sigstore", map[string][]byte{verify.TrustRootKey: theirRoot})
	issuer := `https://token\.actions\.githubusercontent\.com`
	subject := `https://github\.com/kumodo/web/\.github/workflows/release\.yaml@refs/tags/v.*`

	for _, layout := range []string{"tag", "referrer"} {
		repo := "keyless/" + layout
		d := signedBundle(t, reg, repo, "v1", "blue")
		ref, err := reg.Digest(repo, d)
		require.NoError(t, err)
		if layout == "tag" {
			require.NoError(t, ours.SignTag(ctx, ref, ciIssuer, ciSubject, cosigner.Evidence{}, reg.ClientOptions(ctx)...))
		} else {
			require.NoError(t, ours.SignReferrer(ctx, ref, ciIssuer, ciSubject, cosigner.Evidence{}, reg.ClientOptions(ctx)...))
		}
		name := "keyless-" + layout
		newSourceRelease(t, ns, name, ociSource(reg.URL(repo), "v1", ""), withKeyless("sigstore", issuer, subject))
		standIn.apply(ns, name)
		waitInSync(t, ns, name, metav1.ConditionTrue, "InSync")
		diff := getDiff(t, ns, name, "")
		require.NotNil(t, diff.ResolvedSource.Verified, layout)
		assert.Equal(t, d, diff.ResolvedSource.Digest)
		assert.Equal(t, ciIssuer, diff.ResolvedSource.Verified.Issuer)
		assert.Equal(t, ciSubject, diff.ResolvedSource.Verified.Subject)
		assert.Equal(t, layout, diff.ResolvedSource.Verified.Layout)
		assert.Empty(t, diff.ResolvedSource.Verified.Key)
		get := kubectlConvoy(t, "", "release", "get", name, "-n", ns)
		require.Zero(t, get.code, "%s", get)
		assert.Contains(t, get.stdout, "signed: cosign keyless by "+ciSubject+" of issuer "+ciIssuer+" ("+layout+")")
	}

	// Signed by another workflow of the same CI.
	wrong := signedBundle(t, reg, "keyless/wrong", "v1", "green")
	ref, err := reg.Digest("keyless/wrong", wrong)
	require.NoError(t, err)
	require.NoError(t, ours.SignReferrer(ctx, ref, ciIssuer, "https://github.com/kumodo/web/.github/workflows/pr.yaml@refs/pull/7/merge", cosigner.Evidence{}, reg.ClientOptions(ctx)...))
	newSourceRelease(t, ns, "wrong-identity", ociSource(reg.URL("keyless/wrong"), "v1", ""), withKeyless("sigstore", issuer, subject))
	assertUnverified(t, ns, "wrong-identity", "none by an expected identity", "pr.yaml@refs/pull/7/merge")

	newSourceRelease(t, ns, "other-root", ociSource(reg.URL("keyless/referrer"), "v1", ""), withKeyless("other-sigstore", issuer, subject))
	assertUnverified(t, ns, "other-root", "none verifies against the trusted root")

	newSourceRelease(t, ns, "no-root", ociSource(reg.URL("keyless/referrer"), "v1", ""), withKeyless("absent", issuer, subject))
	assertUnverified(t, ns, "no-root", "verify.trustedRootSecretRef Secret "+ns+"/absent not found")
}

// The attack of a tenant who may create Secrets on a Release that asks for
// signatures: plant a render of its own objects in the render store
// (its ref is only a hash of its content) and pin the Release to it, or
// ask /diff?render= for it. Without any admission policy, a planted render
// names no revision of the source, or an unsigned one: SignatureUnverified,
// and none of its objects reaches /diff, /preview or the drift loop, which
// requests no sync toward it. A render the controller stored (it names the
// signed digest it was made from) pins as before. A planted render that
// names the signed digest is refused at admission
// (artifacts/admission/protect-render-store.yaml).
func TestPlantedRenderOfAVerifiedRelease(t *testing.T) {
	// Not parallel: it applies a cluster-scoped ValidatingAdmissionPolicy and
	// its binding.
	ctx := context.Background()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	reg := startTestRegistry(t, ociregistry.Options{})
	ci, ciPub, err := cosigner.GenerateKey()
	require.NoError(t, err)
	keysSecret(t, ns, "ci-keys", map[string][]byte{"ci.pub": ciPub})
	signed := signedBundle(t, reg, "apps/web", "v1", "blue")
	require.NoError(t, signReferrer(ctx, reg, "apps/web", signed, ci))
	unsigned := signedBundle(t, reg, "apps/web", "v2", "red")
	newSourceRelease(t, ns, "web", ociSource(reg.URL("apps/web"), "v1", ""), withVerify("ci-keys"), automatic)
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	release := func() *convoyv1alpha1.Release { return standIn.release(ns, "web") }
	pin := func(ref string) {
		mustKubectl(t, "", "", "patch", "release.convoy.kumodo.io/web", "-n", ns, "--type=merge", "-p", `{"spec":{"pin":{"renderRef":"`+ref+`"}}}`)
	}

	// The controller's render pins: verified by the digest it names.
	applied := release().Status.LastApplied.RenderRef
	pin(applied)
	eventually(t, "the pinned render compared", func(context.Context) error {
		if d := getDiff(t, ns, "web", ""); d.RenderSource != subresourcesv1alpha1.RenderSourcePinned || d.Result != subresourcesv1alpha1.DiffInSync {
			return fmt.Errorf("%s %s: %s", d.RenderSource, d.Result, d.Message)
		}
		return nil
	})
	d := getDiff(t, ns, "web", "")
	require.NotNil(t, d.ResolvedSource)
	assert.Equal(t, signed, d.ResolvedSource.Digest)
	require.NotNil(t, d.ResolvedSource.Verified, "verified again, by the digest its Secret names")
	assert.Equal(t, "ci.pub", d.ResolvedSource.Verified.Key)

	evil := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: planted, namespace: " + ns + "}\ndata: {evil: \"true\"}\n"
	for _, tc := range []struct{ name, resolved, says string }{
		{"naming no revision", "", "names no revision"},
		{"naming an unsigned digest", fmt.Sprintf(`{"kind":"OCIRepository","url":%q,"digest":%q}`, reg.URL("apps/web"), unsigned), "no signature"},
		{"naming another repository", fmt.Sprintf(`{"kind":"OCIRepository","url":%q,"digest":%q}`, reg.URL("apps/other"), signed), "not from the Release's source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secret, ref := renderSecret(t, ns, "web", tc.resolved, evil, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: apps-web-cm, namespace: %s}\ndata: {case: %q}\n", ns, tc.name))
			_, err := kubeClient(t).CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{})
			require.NoError(t, err, "no admission policy here")

			stored := getDiff(t, ns, "web", "?render="+ref)
			assert.Equal(t, subresourcesv1alpha1.DiffUndetermined, stored.Result)
			assert.Equal(t, verify.ReasonSignatureUnverified, stored.Reason)
			assert.Contains(t, stored.Message, tc.says)
			assert.Empty(t, stored.Objects)

			synced := release().Annotations[convoyv1alpha1.AnnotationSyncRequestedAt]
			pin(ref)
			eventually(t, "InSync Unknown for the pinned render "+ref, func(context.Context) error {
				c := inSyncOf(t, ns, "web")
				if c == nil || c.Status != metav1.ConditionUnknown || !strings.Contains(c.Message, ref) {
					return fmt.Errorf("InSync %+v", c)
				}
				return nil
			})
			cond := inSyncOf(t, ns, "web")
			assert.Contains(t, cond.Message, verify.ReasonSignatureUnverified+": ")
			assert.Contains(t, cond.Message, tc.says)
			d := getDiff(t, ns, "web", "")
			assert.Equal(t, verify.ReasonSignatureUnverified, d.Reason)
			assert.Empty(t, d.Objects, "no planted object is compared")
			r := kubectl(t, "", "", "get", "--raw", previewPath(ns, "web"))
			require.Error(t, r.err, "preview of a planted render: %s", r.stdout)
			assert.NotContains(t, r.stdout, "planted")
			assert.Equal(t, synced, release().Annotations[convoyv1alpha1.AnnotationSyncRequestedAt], "no sync toward the planted render")
			_, err = kubeClient(t).CoreV1().ConfigMaps(ns).Get(ctx, "planted", metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "nothing planted was applied: %v", err)
		})
	}

	// Naming the signed digest, the Secret would pass as the controller's:
	// only the controller may write render Secrets.
	tenant := "planter-" + ns
	grant(t, ns, tenant, rbacPolicy("", "secrets", "create", "get"))
	forged, _ := renderSecret(t, ns, "web", fmt.Sprintf(`{"kind":"OCIRepository","url":%q,"digest":%q}`, reg.URL("apps/web"), signed), evil)
	forgedYAML, err := yaml.Marshal(forged)
	require.NoError(t, err)
	applyPolicy(t, "protect-render-store.yaml", func(s string) string {
		return strings.Replace(s, "system:serviceaccount:convoy-system:convoy-controller", "admin", 1)
	}, func() kubectlResult { return kubectl(t, user(t, tenant), string(forgedYAML), "create", "-f", "-") },
		"only convoy's controller may write render Secrets")
}
