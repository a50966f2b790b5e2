package errtext

import "strings"

// SigstoreStep is a step of sigstore-go's (v1.3.0) verify.Verifier.Verify.
type SigstoreStep string

// The steps whose failures SigstoreFailure tells apart.
const (
	StepLogInclusion    SigstoreStep = "log inclusion"
	StepTimestamps      SigstoreStep = "timestamps"
	StepLeafCertificate SigstoreStep = "leaf certificate"
	StepSCT             SigstoreStep = "signed certificate timestamp"
	StepSignature       SigstoreStep = "signature"
)

// SigstoreFailure tells which step of sigstore-go's Verify failed, and
// cleans its message. Verify wraps each step's error without a type:
// fmt.Errorf("failed to verify log inclusion: %w"), "failed to verify
// timestamps: %w", "failed to verify leaf certificate: %w", "failed to
// verify signed certificate timestamp: %w", "failed to verify signature:
// %w"; some of its thresholds format a nil error with %w, which prints
// "; error: %!w(<nil>)": dropped. The step is "" for any other error.
func SigstoreFailure(err error) (SigstoreStep, string) {
	if err == nil {
		return "", ""
	}
	msg := strings.ReplaceAll(err.Error(), "; error: %!w(<nil>)", "")
	for _, step := range []SigstoreStep{StepLogInclusion, StepTimestamps, StepLeafCertificate, StepSCT, StepSignature} {
		if strings.HasPrefix(msg, "failed to verify "+string(step)+":") {
			return step, msg
		}
	}
	return "", msg
}
