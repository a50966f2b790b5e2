package cosign

import (
	"fmt"
	"strings"

	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// Kind is what an Error is.
type Kind int

const (
	// KindNoSignature: neither layout holds a signature of the artifact.
	KindNoSignature Kind = iota + 1
	// KindWrongKey: signatures exist, none verifies with the trusted keys.
	KindWrongKey
	// KindOtherDigest: a trusted key signed another digest than the
	// artifact's.
	KindOtherDigest
	// KindTooMany: more signatures than Limits.MaxSignatures.
	KindTooMany
	// KindInvalid: a malformed listing, payload or bundle (every signature
	// malformed, or past Limits.MaxBytes); or an invalid argument.
	KindInvalid
	// KindRegistry: the registry failed (Err is go-containerregistry's
	// error).
	KindRegistry
	// KindWrongIdentity: keyless signatures verify against the trust root,
	// none by a certificate of the expected identities.
	KindWrongIdentity
	// KindUntrusted: keyless signatures exist, none verifies against the
	// trust root (a certificate of another root, no transparency log
	// entry or timestamp it requires, a bad signature).
	KindUntrusted
	// KindTooLarge: the manifest of the signature tag or the referrers
	// index is past Limits.MaxBytes, refused by its Content-Length before
	// it is read or as it is read (Transport). One signature's manifest or
	// blob past it is a malformed signature (KindInvalid, KindWrongKey).
	KindTooLarge
)

func (k Kind) String() string {
	switch k {
	case KindNoSignature:
		return "NoSignature"
	case KindWrongKey:
		return "WrongKey"
	case KindOtherDigest:
		return "OtherDigest"
	case KindTooMany:
		return "TooMany"
	case KindInvalid:
		return "Invalid"
	case KindRegistry:
		return "Registry"
	case KindWrongIdentity:
		return "WrongIdentity"
	case KindUntrusted:
		return "Untrusted"
	case KindTooLarge:
		return "TooLarge"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// maxMessage bounds an Error's message; maxEcho bounds any text of the
// registry's in it.
const (
	maxMessage = 1024
	maxEcho    = 200
)

// Error is a failure of Verify or ParseKeys. Message is one line.
type Error struct {
	Kind    Kind
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Kind == KindRegistry {
		return e.Message + ": " + echo(e.Err.Error())
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

func errorf(kind Kind, err error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: oneLine(fmt.Sprintf(format, args...), maxMessage), Err: err}
}

// echo bounds text that came from the registry, on one line.
func echo(s string) string { return oneLine(s, maxEcho) }

func oneLine(s string, limit int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
	return truncate.String(s, limit)
}
