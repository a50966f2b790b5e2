package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// scheme is how a Type signs: the header and either an HMAC-SHA256 of the
// body (hex, after prefix) or the secret itself.
type scheme struct {
	header string
	prefix string // before the hex of an HMAC
	token  bool   // the header is the secret itself
}

var schemes = map[Type]scheme{
	GitHub:          {header: "X-Hub-Signature-256", prefix: "sha256="},
	GitLab:          {header: "X-Gitlab-Token", token: true},
	Gitea:           {header: "X-Gitea-Signature"},
	Forgejo:         {header: "X-Forgejo-Signature"},
	BitbucketServer: {header: "X-Hub-Signature", prefix: "sha256="},
	// The header of GitHub's form under a name no forge uses: a script
	// signs as GitHub does (sha256=HEX) and is not taken for GitHub.
	Generic: {header: "X-Signature-256", prefix: "sha256="},
	Harbor:  {header: "Authorization", token: true},
}

// Verify checks the signature of a delivery of type t on its raw body,
// before anything reads the body: an HMAC-SHA256 of body with secret
// compared with hmac.Equal, or a token compared in constant time (of
// their SHA-256, so that not even the length leaks). An empty secret,
// a missing header, a header sent twice or not of the sender's form are
// refused. The error is an *Error.
func Verify(t Type, h http.Header, body, secret []byte) error {
	s, ok := schemes[t]
	if !ok {
		return &Error{Kind: KindUnknownType, Type: t}
	}
	if len(secret) == 0 {
		return &Error{Kind: KindNoSecret, Type: t}
	}
	values := h.Values(s.header)
	switch {
	case len(values) == 0:
		return &Error{Kind: KindMissingHeader, Type: t, Header: s.header}
	case len(values) > 1 || values[0] == "":
		return &Error{Kind: KindMalformedHeader, Type: t, Header: s.header}
	}
	value := values[0]
	if s.token {
		got, want := sha256.Sum256([]byte(value)), sha256.Sum256(secret)
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			return &Error{Kind: KindMismatch, Type: t, Header: s.header}
		}
		return nil
	}
	hexSig, found := strings.CutPrefix(value, s.prefix)
	if !found || len(hexSig) != 2*sha256.Size {
		return &Error{Kind: KindMalformedHeader, Type: t, Header: s.header}
	}
	sig, err := hex.DecodeString(hexSig)
	if err != nil {
		return &Error{Kind: KindMalformedHeader, Type: t, Header: s.header}
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return &Error{Kind: KindMismatch, Type: t, Header: s.header}
	}
	return nil
}

// Sign returns the header and value a sender of type t would send for
// body with secret: the tests' and a script's way to sign.
func Sign(t Type, body, secret []byte) (header, value string) {
	s := schemes[t]
	if s.token {
		return s.header, string(secret)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return s.header, s.prefix + hex.EncodeToString(mac.Sum(nil))
}
