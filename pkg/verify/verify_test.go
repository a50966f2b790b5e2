package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cosign"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// fetcher is a Fetcher of the Secrets it holds, by name, and of public (nil:
// the server uses no public trust root); it runs each shared request
// itself and counts them.
type fetcher struct {
	secrets   map[string]map[string][]byte
	public    *cosign.TrustRoot
	publicErr error
	shared    int
}

func (f *fetcher) Secret(_ context.Context, name, _ string) (*corev1.Secret, error) {
	data, ok := f.secrets[name]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
	}
	return &corev1.Secret{Data: data}, nil
}

func (f *fetcher) PublicTrustRoot(context.Context, string) (*cosign.TrustRoot, error) {
	return f.public, f.publicErr
}

func (f *fetcher) Shared(ctx context.Context, _ string, fn func(context.Context) (any, error)) (any, error) {
	f.shared++
	return fn(ctx)
}

func (f *fetcher) RegistryFailure(what string, err error) error {
	return fmt.Errorf("the registry's failure: %s: %w", what, err)
}

// artifact is a digest of the namespace shop.
func artifact(t *testing.T) Artifact {
	ref, err := name.NewDigest("registry.example/charts/web@sha256:" + strings.Repeat("a", 64))
	require.NoError(t, err)
	return Artifact{Namespace: "shop", Ref: ref, Where: "oci://registry.example/charts/web:1"}
}

func verificationCount(t *testing.T, outcome string) float64 {
	t.Helper()
	return providerCount(t, ProviderCosign, outcome)
}

// providerCount is the count of verifications of provider with outcome.
func providerCount(t *testing.T, provider, outcome string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(verifications.WithLabelValues(provider, outcome))
	require.NoError(t, err)
	return v
}

// What a policy cannot verify with is SignatureUnverified (nothing is asked
// of the registry), counted as unverified; the public trust root's failure
// is the fetcher's; a provider other than cosign is ErrUnknownProvider,
// counted as a failure.
func TestVerifyPolicy(t *testing.T) {
	RegisterMetrics() // unregistered metrics count nothing
	ref := func(n string) *convoyv1alpha1.LocalObjectReference {
		return &convoyv1alpha1.LocalObjectReference{Name: n}
	}
	ours := []convoyv1alpha1.OIDCIdentityMatch{{Issuer: "https://issuer", Subject: "https://subject"}}
	publicDown := errors.New("the public root is down")
	for _, tc := range []struct {
		name      string
		spec      convoyv1alpha1.OCIVerification
		publicErr error
		err       error
		says      string
	}{
		{name: "another provider", spec: convoyv1alpha1.OCIVerification{Provider: "notation", SecretRef: ref("keys")}, err: ErrUnknownProvider},
		{name: "no keys, no identity", says: "verify names neither a secretRef of public keys nor matchOIDCIdentity"},
		{name: "no Secret", spec: convoyv1alpha1.OCIVerification{SecretRef: ref("absent")},
			says: "oci://registry.example/charts/web:1: verify.secretRef Secret shop/absent not found: nothing to verify with"},
		{name: "no public key", spec: convoyv1alpha1.OCIVerification{SecretRef: ref("empty")}, says: "verify.secretRef Secret shop/empty: "},
		{name: "no public root allowed", spec: convoyv1alpha1.OCIVerification{MatchOIDCIdentity: ours}, says: "--sigstore-public-trust-root is off"},
		{name: "the public root down", spec: convoyv1alpha1.OCIVerification{MatchOIDCIdentity: ours}, publicErr: publicDown, err: publicDown},
		{name: "no trust root Secret", spec: convoyv1alpha1.OCIVerification{MatchOIDCIdentity: ours, TrustedRootSecretRef: ref("absent")},
			says: "verify.trustedRootSecretRef Secret shop/absent not found"},
		{name: "no trusted_root.json", spec: convoyv1alpha1.OCIVerification{MatchOIDCIdentity: ours, TrustedRootSecretRef: ref("empty")},
			says: "verify.trustedRootSecretRef Secret shop/empty has no key trusted_root.json"},
		{name: "a broken trust root", spec: convoyv1alpha1.OCIVerification{MatchOIDCIdentity: ours, TrustedRootSecretRef: ref("broken")},
			says: "not a Sigstore trusted_root.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fetcher{publicErr: tc.publicErr, secrets: map[string]map[string][]byte{
				"empty": {"x": []byte("y")}, "broken": {TrustRootKey: []byte(`{"mediaType":"nope"}`)},
			}}
			if tc.spec.Provider == "" {
				tc.spec.Provider = ProviderCosign
			}
			outcome := verifyUnverified
			if tc.err != nil {
				outcome = verifyFailure
			}
			before := verificationCount(t, outcome)
			_, err := New(Options{}).Verify(context.Background(), f, artifact(t), &tc.spec)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
			} else {
				assert.Equal(t, ReasonSignatureUnverified, failure.ReasonOf(err), "%v", err)
				assert.ErrorContains(t, err, tc.says)
			}
			if tc.spec.Provider == ProviderCosign {
				assert.Equal(t, before+1, verificationCount(t, outcome))
			}
			assert.Zero(t, f.shared, "nothing asked of the registry")
		})
	}
}

// A signature is kept for MaxAge; a SignatureUnverified for
// UnverifiedMaxAge, but not for a refresh after it was read; a failure of
// the registry, or of anything but cosign, is not kept; with MaxAge zero,
// nothing is.
func TestVerdict(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Now())
	signer := &cosign.Signer{Key: "ci.pub", Layout: "referrer"}
	for _, tc := range []struct {
		name   string
		maxAge time.Duration
		err    error
		reason string
		kept   time.Duration
	}{
		{name: "verified", maxAge: time.Minute, kept: time.Minute},
		{name: "unverified", maxAge: time.Minute, err: &cosign.Error{Kind: cosign.KindNoSignature, Message: "no signature of it"},
			reason: ReasonSignatureUnverified, kept: UnverifiedMaxAge},
		{name: "unverified, kept less than MaxAge", maxAge: 10 * time.Second, err: &cosign.Error{Kind: cosign.KindWrongKey, Message: "another key"},
			reason: ReasonSignatureUnverified, kept: 10 * time.Second},
		{name: "the registry failing", maxAge: time.Minute, err: &cosign.Error{Kind: cosign.KindRegistry, Message: "503", Err: errors.New("503")}},
		{name: "not cosign's", maxAge: time.Minute, err: errors.New("a bug"), reason: failure.ReasonInternalError},
		{name: "nothing kept", err: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := New(Options{MaxAge: tc.maxAge, Clock: clk})
			f := &fetcher{}
			a := artifact(t)
			checks := 0
			check := func(context.Context) (*cosign.Signer, error) {
				checks++
				if tc.err != nil {
					return nil, tc.err
				}
				return signer, nil
			}
			run := func() error {
				sig, err := v.verdict(ctx, f, a, "keys\x00d", check)
				if err == nil {
					assert.Equal(t, "ci.pub", sig.Key)
					assert.Equal(t, ProviderCosign, sig.Provider)
				}
				return err
			}
			err := run()
			switch {
			case tc.reason != "":
				assert.Equal(t, tc.reason, failure.ReasonOf(err), "%v", err)
				assert.ErrorContains(t, err, a.Where+": ")
			case tc.err != nil:
				assert.ErrorContains(t, err, "the registry's failure: "+a.Where+": reading the signatures")
			default:
				require.NoError(t, err)
			}
			_ = run()
			if tc.kept == 0 {
				assert.Equal(t, 2, checks, "not kept")
				return
			}
			assert.Equal(t, 1, checks, "kept")
			if tc.reason != "" {
				a.Since = clk.Now().Add(time.Millisecond)
				_ = run()
				assert.Equal(t, 2, checks, "a refresh after it was read checks again")
				a.Since = time.Time{}
			}
			clk.SetTime(clk.Now().Add(tc.kept))
			before := checks
			_ = run()
			assert.Equal(t, before+1, checks, "checked again past %s", tc.kept)
		})
	}
}

func TestAsks(t *testing.T) {
	oci := &convoyv1alpha1.OCIRepositorySource{URL: "oci://registry.example/charts/web"}
	release := &convoyv1alpha1.Release{Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{OCIRepository: oci}}}
	assert.False(t, Asks(release))
	oci.Verify = &convoyv1alpha1.OCIVerification{Provider: ProviderCosign}
	assert.True(t, Asks(release))
	assert.False(t, Asks(&convoyv1alpha1.Release{}), "not an OCI source")
}
