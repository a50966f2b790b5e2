package webhook

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	testSecret = []byte("s3cr3t-Of-The-Receiver")
	testBody   = []byte(`{"ref":"refs/heads/main"}`)
)

// signed is a header of t signed for body with secret.
func signed(t Type, body, secret []byte) http.Header {
	name, value := Sign(t, body, secret)
	h := http.Header{}
	h.Set(name, value)
	return h
}

func TestVerify(t *testing.T) {
	for _, typ := range Types {
		s := schemes[typ]
		tests := []struct {
			name   string
			header http.Header
			secret []byte
			kind   Kind // 0: accepted
		}{
			{name: "valid", header: signed(typ, testBody, testSecret), secret: testSecret},
			{name: "wrong secret", header: signed(typ, testBody, []byte("another")), secret: testSecret, kind: KindMismatch},
			{name: "empty secret", header: signed(typ, testBody, nil), secret: nil, kind: KindNoSecret},
			{name: "empty secret, any header", header: signed(typ, testBody, testSecret), secret: []byte{}, kind: KindNoSecret},
			{name: "missing header", header: http.Header{}, secret: testSecret, kind: KindMissingHeader},
			{name: "empty header", header: http.Header{s.header: {""}}, secret: testSecret, kind: KindMalformedHeader},
			{name: "header twice", header: http.Header{http.CanonicalHeaderKey(s.header): {
				signed(typ, testBody, testSecret).Get(s.header), signed(typ, testBody, testSecret).Get(s.header)}},
				secret: testSecret, kind: KindMalformedHeader},
		}
		if !s.token {
			tests = append(tests, []struct {
				name   string
				header http.Header
				secret []byte
				kind   Kind
			}{
				{name: "valid signature of another body", header: signed(typ, []byte(`{"ref":"refs/heads/evil"}`), testSecret), secret: testSecret, kind: KindMismatch},
				{name: "not hex", header: http.Header{http.CanonicalHeaderKey(s.header): {s.prefix + strings.Repeat("zz", 32)}}, secret: testSecret, kind: KindMalformedHeader},
				{name: "short", header: http.Header{http.CanonicalHeaderKey(s.header): {s.prefix + "abcd"}}, secret: testSecret, kind: KindMalformedHeader},
				{name: "sha1 of GitHub's old header", header: http.Header{http.CanonicalHeaderKey(s.header): {"sha1=" + strings.Repeat("ab", 20)}}, secret: testSecret, kind: KindMalformedHeader},
			}...)
			if s.prefix != "" {
				_, v := Sign(typ, testBody, testSecret)
				tests = append(tests, struct {
					name   string
					header http.Header
					secret []byte
					kind   Kind
				}{name: "no prefix", header: http.Header{http.CanonicalHeaderKey(s.header): {strings.TrimPrefix(v, s.prefix)}}, secret: testSecret, kind: KindMalformedHeader})
			}
		} else {
			tests = append(tests, struct {
				name   string
				header http.Header
				secret []byte
				kind   Kind
			}{name: "a prefix of the token", header: http.Header{http.CanonicalHeaderKey(s.header): {string(testSecret[:5])}}, secret: testSecret, kind: KindMismatch})
		}
		for _, tt := range tests {
			t.Run(string(typ)+"/"+tt.name, func(t *testing.T) {
				err := Verify(typ, tt.header, testBody, tt.secret)
				if tt.kind == 0 {
					require.NoError(t, err)
					return
				}
				var werr *Error
				require.ErrorAs(t, err, &werr)
				assert.Equal(t, tt.kind, werr.Kind)
				assert.Equal(t, typ, werr.Type)
				assert.NotContains(t, err.Error(), string(testSecret))
				assert.NotContains(t, err.Error(), "another")
				if sig := tt.header.Get(s.header); len(sig) > 8 {
					assert.NotContains(t, err.Error(), sig, "the signature sent is not echoed")
				}
			})
		}
	}
}

func TestVerifyHeaders(t *testing.T) {
	// The headers each sender signs with, spelled as they send them.
	want := map[Type]string{
		GitHub: "X-Hub-Signature-256", GitLab: "X-Gitlab-Token", Gitea: "X-Gitea-Signature",
		Forgejo: "X-Forgejo-Signature", BitbucketServer: "X-Hub-Signature", Generic: "X-Signature-256",
		Harbor: "Authorization",
	}
	require.Len(t, want, len(Types))
	for typ, header := range want {
		h := http.Header{}
		_, value := Sign(typ, testBody, testSecret)
		h[header] = []string{value} // not canonicalised by Set
		assert.NoError(t, Verify(typ, h, testBody, testSecret), typ)
	}
	_, value := Sign(GitHub, testBody, testSecret)
	assert.True(t, strings.HasPrefix(value, "sha256="))
	_, value = Sign(Gitea, testBody, testSecret)
	assert.Len(t, value, 64)
}

func TestVerifyOtherTypesHeader(t *testing.T) {
	// A GitHub signature does not pass for Bitbucket Server (X-Hub-Signature)
	// nor Generic: each reads its own header.
	h := signed(GitHub, testBody, testSecret)
	for _, typ := range []Type{BitbucketServer, Generic, Gitea} {
		var werr *Error
		require.ErrorAs(t, Verify(typ, h, testBody, testSecret), &werr)
		assert.Equal(t, KindMissingHeader, werr.Kind)
	}
}

func TestVerifyUnknownType(t *testing.T) {
	var werr *Error
	err := Verify("bitbucket-cloud", http.Header{}, testBody, testSecret)
	require.True(t, errors.As(err, &werr))
	assert.Equal(t, KindUnknownType, werr.Kind)
	_, err = Parse("bitbucket-cloud", http.Header{}, testBody)
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, KindUnknownType, werr.Kind)
}

func TestKindString(t *testing.T) {
	assert.Equal(t, "Mismatch", KindMismatch.String())
	assert.Equal(t, "Kind(99)", Kind(99).String())
}
