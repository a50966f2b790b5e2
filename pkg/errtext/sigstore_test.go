package errtext

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The texts come from sigstore-go's Verify itself, on signatures of its
// VirtualSigstore: each step made to fail in turn.
func TestSigstoreFailure(t *testing.T) {
	ours, err := ca.NewVirtualSigstore()
	require.NoError(t, err)
	other, err := ca.NewVirtualSigstore()
	require.NoError(t, err)
	artifact := []byte("an artifact")
	signed, err := ours.Sign("ci@example.com", "https://issuer.example", artifact)
	require.NoError(t, err)
	policy := verify.NewPolicy(verify.WithArtifact(bytes.NewReader(artifact)), verify.WithoutIdentitiesUnsafe())
	tsaOnly, err := root.NewTrustedRoot(root.TrustedRootMediaType01, ours.FulcioCertificateAuthorities(), nil, other.TimestampingAuthorities(), nil)
	require.NoError(t, err)
	foreignCA, err := root.NewTrustedRoot(root.TrustedRootMediaType01, other.FulcioCertificateAuthorities(), nil, ours.TimestampingAuthorities(), ours.RekorLogs())
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		material root.TrustedMaterial
		opts     []verify.VerifierOption
		policy   verify.PolicyBuilder
		step     SigstoreStep
	}{
		{"another log", other, []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1)}, policy, StepLogInclusion},
		{"another timestamping authority", tsaOnly, []verify.VerifierOption{verify.WithSignedTimestamps(1)}, policy, StepTimestamps},
		{"another certificate authority", foreignCA, []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1)}, policy, StepLeafCertificate},
		{"another artifact", ours, []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1)},
			verify.NewPolicy(verify.WithArtifact(bytes.NewReader([]byte("another"))), verify.WithoutIdentitiesUnsafe()), StepSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := verify.NewVerifier(tc.material, tc.opts...)
			require.NoError(t, err)
			_, err = v.Verify(signed, tc.policy)
			require.Error(t, err)
			step, msg := SigstoreFailure(err)
			assert.Equal(t, tc.step, step, err.Error())
			assert.NotContains(t, msg, "%!w")
			assert.True(t, strings.HasPrefix(msg, "failed to verify "), msg)
		})
	}
	step, msg := SigstoreFailure(assert.AnError)
	assert.Empty(t, step)
	assert.Equal(t, assert.AnError.Error(), msg)
}
