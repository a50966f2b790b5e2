package gitverify

import (
	"fmt"
	"strings"

	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// Kind is what an Error is, for the caller to map to a reason: every kind
// but KindInvalidKeys and KindInvalid is a signature that does not verify
// (SignatureUnverified); KindInvalidKeys is the Secret to correct.
type Kind int

const (
	// KindUnsigned: the object carries no signature.
	KindUnsigned Kind = iota + 1
	// KindUnknownKey: the object is signed by a key that is not in the
	// key set (the message names its key id or fingerprint).
	KindUnknownKey
	// KindBadSignature: a trusted key's signature does not verify the
	// object's content (tampered, or signed over other content), or the
	// key or the signature is expired or revoked, or an SSH signature of
	// another namespace than "git".
	KindBadSignature
	// KindMalformed: the signature block does not parse.
	KindMalformed
	// KindTooLarge: the signature block is past Limits.SignatureBytes.
	KindTooLarge
	// KindNotAnnotatedTag: a mode that verifies a tag (Tag, TagAndHEAD)
	// and a ref that names no annotated tag (a lightweight tag, a branch,
	// a commit).
	KindNotAnnotatedTag
	// KindTagNotOnCommit: a tag mode, and the tag names another object
	// than the commit that is rendered (or a tag, not a commit), or the
	// tag object of a ref refs/tags/NAME is not of the tag NAME.
	KindTagNotOnCommit
	// KindInvalidKeys: the key Secret is past its limits, holds no key, or
	// a key that does not parse (or a private key).
	KindInvalidKeys
	// KindInvalid: an invalid argument: an object whose content is not
	// its id's, of another type, an unknown mode (a bug of the caller).
	KindInvalid
)

func (k Kind) String() string {
	switch k {
	case KindUnsigned:
		return "Unsigned"
	case KindUnknownKey:
		return "UnknownKey"
	case KindBadSignature:
		return "BadSignature"
	case KindMalformed:
		return "Malformed"
	case KindTooLarge:
		return "TooLarge"
	case KindNotAnnotatedTag:
		return "NotAnnotatedTag"
	case KindTagNotOnCommit:
		return "TagNotOnCommit"
	case KindInvalidKeys:
		return "InvalidKeys"
	case KindInvalid:
		return "Invalid"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// maxMessage bounds an Error's message: it quotes text of the repository
// and of the Secret.
const maxMessage = 1024

// Error is a failure of Verify, Check or ParseKeys. Message is one line
// that says what was expected and what was found.
type Error struct {
	Kind    Kind
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// errorf is an Error of kind; err's text, when err is set, follows the
// message.
func errorf(kind Kind, err error, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return &Error{Kind: kind, Message: oneLine(msg), Err: err}
}

// oneLine is s on one line, at most maxMessage bytes.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
	return truncate.String(s, maxMessage)
}
