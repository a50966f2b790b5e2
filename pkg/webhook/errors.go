package webhook

import "fmt"

// Kind is what is wrong with a delivery.
type Kind int

const (
	// KindNoSecret: the receiver has no secret; nothing is accepted
	// without one.
	KindNoSecret Kind = iota + 1
	// KindMissingHeader: the signature or token header is absent.
	KindMissingHeader
	// KindMalformedHeader: the header is there but not of the sender's
	// form (prefix, hex, length), or sent more than once.
	KindMalformedHeader
	// KindMismatch: the signature or token is not the secret's.
	KindMismatch
	// KindMalformedBody: the body is not the JSON the sender sends.
	KindMalformedBody
	// KindUnknownType: no such Type.
	KindUnknownType
)

var kindNames = map[Kind]string{
	KindNoSecret:        "NoSecret",
	KindMissingHeader:   "MissingHeader",
	KindMalformedHeader: "MalformedHeader",
	KindMismatch:        "Mismatch",
	KindMalformedBody:   "MalformedBody",
	KindUnknownType:     "UnknownType",
}

// String is the Kind's name.
func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is a refused delivery. Its message names the type, the header and
// the kind, never the secret, the signature sent nor the body.
type Error struct {
	Kind   Kind
	Type   Type
	Header string // the header concerned, if any
	Err    error  // the cause (a JSON decoding error), if any
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("webhook %s: ", e.Type)
	switch e.Kind {
	case KindNoSecret:
		msg += "the receiver has no secret: deliveries are refused"
	case KindMissingHeader:
		msg += fmt.Sprintf("header %s is missing", e.Header)
	case KindMalformedHeader:
		msg += fmt.Sprintf("header %s is malformed", e.Header)
	case KindMismatch:
		msg += fmt.Sprintf("header %s does not match the secret", e.Header)
	case KindMalformedBody:
		msg += "malformed body"
	case KindUnknownType:
		msg += "unknown type"
	default:
		msg += e.Kind.String()
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }
