package cosign_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/internal/cosigner"
	"github.com/kumodo/convoy-apiserver/pkg/cosign"
)

// testRegistry is go-containerregistry's in-memory registry on loopback,
// with a record of the requests it served and a hook to misbehave.
type testRegistry struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []string
	hook     func(w http.ResponseWriter, r *http.Request) bool

	// read counts the bytes of answers' bodies its pullers read.
	read atomic.Int64
}

func newRegistry(t testing.TB, referrers bool) *testRegistry {
	t.Helper()
	reg := &testRegistry{}
	h := registry.New(registry.WithReferrersSupport(referrers), registry.Logger(log.New(io.Discard, "", 0)))
	reg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg.mu.Lock()
		reg.requests = append(reg.requests, r.Method+" "+r.URL.Path)
		hook := reg.hook
		reg.mu.Unlock()
		if hook != nil && hook(w, r) {
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(reg.srv.Close)
	return reg
}

func (r *testRegistry) setHook(hook func(w http.ResponseWriter, r *http.Request) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hook = hook
}

// reset forgets the requests served so far.
func (r *testRegistry) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = nil
}

// count is how many requests served since reset start with prefix
// ("GET /v2/") and contain part.
func (r *testRegistry) count(prefix, part string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, req := range r.requests {
		if strings.HasPrefix(req, prefix) && strings.Contains(req, part) {
			n++
		}
	}
	return n
}

func (r *testRegistry) host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

func (r *testRegistry) options() []remote.Option {
	return []remote.Option{remote.WithTransport(r.srv.Client().Transport)}
}

// puller is a registry client that reads through cosign.Transport, as
// Verify requires, and counts the bytes it reads (read).
func (r *testRegistry) puller(t testing.TB) *remote.Puller {
	p, err := remote.NewPuller(remote.WithTransport(cosign.Transport(&countingTransport{next: r.srv.Client().Transport, read: &r.read})))
	require.NoError(t, err)
	return p
}

// countingTransport counts the bytes read of the bodies of its answers.
type countingTransport struct {
	next http.RoundTripper
	read *atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, read: c.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	read *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Add(int64(n))
	return n, err
}

// push pushes a random image to repo:tag and returns its digest.
func (r *testRegistry) push(t testing.TB, repo, tag string) name.Digest {
	t.Helper()
	img, err := random.Image(64, 1)
	require.NoError(t, err)
	ref, err := name.NewTag(r.host()+"/"+repo+":"+tag, name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img, r.options()...))
	d, err := img.Digest()
	require.NoError(t, err)
	return ref.Context().Digest(d.String())
}

func hashOf(t *testing.T, ref name.Digest) v1.Hash {
	h, err := v1.NewHash(ref.DigestStr())
	require.NoError(t, err)
	return h
}

func fingerprint(t *testing.T, pub crypto.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func keysOf(t *testing.T, entries map[string]crypto.Signer) *cosign.Keys {
	t.Helper()
	data := map[string][]byte{}
	for name, priv := range entries {
		pem, err := cosigner.PublicKeyPEM(priv)
		require.NoError(t, err)
		data[name] = pem
	}
	keys, err := cosign.ParseKeys(data)
	require.NoError(t, err)
	return keys
}

// env is what each case of TestVerify gets.
type env struct {
	reg         *testRegistry
	ci, other   crypto.Signer
	repo        string
	ctx         context.Context
	opts        []remote.Option
	t           *testing.T
	otherDigest v1.Hash
}

func (e *env) push(tag string) name.Digest { return e.reg.push(e.t, e.repo, tag) }

func TestVerify(t *testing.T) {
	ci, _, err := cosigner.GenerateKey()
	require.NoError(t, err)
	other, _, err := cosigner.GenerateKey()
	require.NoError(t, err)

	trusted := map[string]crypto.Signer{"ci.pub": ci}
	otherDigest := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}

	// A ref whose signature payload is valid JSON of another type.
	badPayload := []byte(`{"critical":{"identity":{"docker-reference":"x"},"image":{"docker-manifest-digest":"sha256:00"},"type":"something else"},"optional":null}`)

	cases := []struct {
		name      string
		referrers bool // the registry's referrers API
		keys      map[string]crypto.Signer
		limits    cosign.Limits
		// setup signs (or not) and returns the ref to verify.
		setup func(e *env) name.Digest
		want  *cosign.Signer
		kind  cosign.Kind
		// message holds these.
		message []string
		// noBlobRead: Verify refuses before it reads any blob.
		noBlobRead bool
	}{
		{
			name: "tag layout, trusted key", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignTag(e.ctx, ref, e.ci, e.opts...))
				return ref
			},
			want: &cosign.Signer{Key: "ci.pub", Layout: cosign.LayoutTag},
		},
		{
			name: "referrer layout (DSSE bundle), trusted key", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignReferrer(e.ctx, ref, e.ci, e.opts...))
				return ref
			},
			want: &cosign.Signer{Key: "ci.pub", Layout: cosign.LayoutReferrer},
		},
		{
			name: "referrer layout, registry without the referrers API (tag schema)", referrers: false, keys: trusted,
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignReferrer(e.ctx, ref, e.ci, e.opts...))
				return ref
			},
			want: &cosign.Signer{Key: "ci.pub", Layout: cosign.LayoutReferrer},
		},
		{
			name: "referrer layout, message-signature bundle", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				data, err := cosigner.MessageBundle(hashOf(e.t, ref), e.ci)
				require.NoError(e.t, err)
				require.NoError(e.t, cosigner.AttachReferrer(e.ctx, ref, data, e.opts...))
				return ref
			},
			want: &cosign.Signer{Key: "ci.pub", Layout: cosign.LayoutReferrer},
		},
		{
			name: "one of two keys: the signer is named", referrers: true,
			keys: map[string]crypto.Signer{"a-other.pub": other, "ci.pub": ci},
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignTag(e.ctx, ref, e.ci, e.opts...))
				return ref
			},
			want: &cosign.Signer{Key: "ci.pub", Layout: cosign.LayoutTag},
		},
		{
			name: "one of two keys, referrer", referrers: true,
			keys: map[string]crypto.Signer{"a-other.pub": other, "ci.pub": ci},
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignReferrer(e.ctx, ref, e.ci, e.opts...))
				return ref
			},
			want: &cosign.Signer{Key: "ci.pub", Layout: cosign.LayoutReferrer},
		},
		{
			name: "a wrong signature first, then the trusted one", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignTag(e.ctx, ref, e.other, e.opts...))
				require.NoError(e.t, cosigner.SignTag(e.ctx, ref, e.ci, e.opts...))
				return ref
			},
			want: &cosign.Signer{Key: "ci.pub", Layout: cosign.LayoutTag},
		},
		{
			name: "wrong key, tag layout", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignTag(e.ctx, ref, e.other, e.opts...))
				return ref
			},
			kind:    cosign.KindWrongKey,
			message: []string{"1 signature(s)", "ci.pub (" + "FP:ci" + ")"},
		},
		{
			name: "wrong key, both layouts", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignTag(e.ctx, ref, e.other, e.opts...))
				require.NoError(e.t, cosigner.SignReferrer(e.ctx, ref, e.other, e.opts...))
				return ref
			},
			kind:    cosign.KindWrongKey,
			message: []string{"2 signature(s)", "FP:ci"},
		},
		{
			name: "signature of another digest, tag layout", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignTagDigest(e.ctx, ref, e.otherDigest, e.ci, e.opts...))
				return ref
			},
			kind:    cosign.KindOtherDigest,
			message: []string{"signs " + otherDigest.String() + ", not REF", "ci.pub", "tag layout"},
		},
		{
			name: "signature of another digest, referrer (DSSE)", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignReferrerDigest(e.ctx, ref, e.otherDigest, e.ci, e.opts...))
				return ref
			},
			kind:    cosign.KindOtherDigest,
			message: []string{"signs " + otherDigest.String() + ", not REF", "referrer layout"},
		},
		{
			name: "signature of another digest, referrer (message signature)", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				data, err := cosigner.MessageBundle(e.otherDigest, e.ci)
				require.NoError(e.t, err)
				require.NoError(e.t, cosigner.AttachReferrer(e.ctx, ref, data, e.opts...))
				return ref
			},
			kind:    cosign.KindOtherDigest,
			message: []string{"signs " + otherDigest.String() + ", not REF"},
		},
		{
			name: "tag moved to an unsigned digest", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest {
				a := e.push("v1")
				require.NoError(e.t, cosigner.SignTag(e.ctx, a, e.ci, e.opts...))
				require.NoError(e.t, cosigner.SignReferrer(e.ctx, a, e.ci, e.opts...))
				return e.push("v1") // the tag now names B
			},
			kind:    cosign.KindNoSignature,
			message: []string{"no signature of REF"},
		},
		{
			name: "no signature", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest { return e.push("v1") },
			kind:  cosign.KindNoSignature, message: []string{"no signature of REF", ".sig"},
		},
		{
			name: "no signature, registry without the referrers API", referrers: false, keys: trusted,
			setup: func(e *env) name.Digest { return e.push("v1") },
			kind:  cosign.KindNoSignature,
		},
		{
			name: "malformed payload signed by the trusted key", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignTagPayload(e.ctx, ref, badPayload, e.ci, e.opts...))
				return ref
			},
			kind:    cosign.KindInvalid,
			message: []string{"1 malformed signature(s)", `critical.type is "something else"`},
		},
		{
			name: "payload that is not JSON, and a bad signature annotation", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignTagPayload(e.ctx, ref, []byte("not json"), e.ci, e.opts...))
				require.NoError(e.t, cosigner.AttachTag(e.ctx, ref, cosigner.Payload(ref.Context(), hashOf(e.t, ref)), "!!not base64", e.opts...))
				return ref
			},
			kind:    cosign.KindInvalid,
			message: []string{"2 malformed signature(s)", "not a simple-signing JSON object"},
		},
		{
			name: "malformed bundle", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.AttachReferrer(e.ctx, ref, []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`), e.opts...))
				return ref
			},
			kind:    cosign.KindInvalid,
			message: []string{"1 malformed signature(s)", "bundle of referrer"},
		},
		{
			name: "a wrong key and a malformed signature: wrong key", referrers: true, keys: trusted,
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignTagPayload(e.ctx, ref, []byte("{}"), e.ci, e.opts...))
				require.NoError(e.t, cosigner.SignReferrer(e.ctx, ref, e.other, e.opts...))
				return ref
			},
			kind:    cosign.KindWrongKey,
			message: []string{"1 signature(s)", "1 more malformed"},
		},
		{
			name: "too many signatures across both layouts", referrers: true, keys: trusted,
			limits: cosign.Limits{MaxSignatures: 2},
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignTag(e.ctx, ref, e.ci, e.opts...))
				require.NoError(e.t, cosigner.SignTag(e.ctx, ref, e.ci, e.opts...))
				require.NoError(e.t, cosigner.SignReferrer(e.ctx, ref, e.ci, e.opts...))
				return ref
			},
			kind:       cosign.KindTooMany,
			message:    []string{"3 signatures", "2 in the tag layout, 1 referrers", "limit of 2"},
			noBlobRead: true,
		},
		{
			name: "signature manifest past the limit", referrers: true, keys: trusted,
			limits: cosign.Limits{MaxBytes: 300},
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.SignTag(e.ctx, ref, e.ci, e.opts...))
				return ref
			},
			kind:       cosign.KindTooLarge,
			message:    []string{"the manifest of the signature tag", "more than the limit of 300 bytes", "refused before it was read"},
			noBlobRead: true,
		},
		{
			name: "signature payload past the limit", referrers: true, keys: trusted,
			limits: cosign.Limits{MaxBytes: 2000},
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				payload := cosigner.Payload(ref.Context(), hashOf(e.t, ref))
				payload = append(payload[:len(payload)-1], []byte(`,"padding":"`+strings.Repeat("x", 4000)+`"}`)...)
				require.NoError(e.t, cosigner.SignTagPayload(e.ctx, ref, payload, e.ci, e.opts...))
				return ref
			},
			kind:       cosign.KindInvalid,
			message:    []string{"the signature payload sha256:", "more than the limit of 2000 bytes"},
			noBlobRead: true,
		},
		{
			name: "bundle past the limit", referrers: true, keys: trusted,
			limits: cosign.Limits{MaxBytes: 1500},
			setup: func(e *env) name.Digest {
				ref := e.push("v1")
				require.NoError(e.t, cosigner.AttachReferrer(e.ctx, ref, []byte(`{"x":"`+strings.Repeat("y", 3000)+`"}`), e.opts...))
				return ref
			},
			kind:       cosign.KindInvalid,
			message:    []string{"the bundle sha256:", "more than the limit of 1500 bytes"},
			noBlobRead: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := newRegistry(t, tc.referrers)
			ctx := context.Background()
			e := &env{reg: reg, ci: ci, other: other, repo: "app", ctx: ctx, opts: reg.options(), t: t, otherDigest: otherDigest}
			ref := tc.setup(e)
			keys := keysOf(t, tc.keys)
			reg.reset()

			signer, err := cosign.Verify(ctx, reg.puller(t), ref, keys, tc.limits)
			if tc.want != nil {
				require.NoError(t, err)
				want := *tc.want
				want.Fingerprint = fingerprint(t, tc.keys[want.Key].Public())
				assert.Equal(t, &want, signer)
				return
			}
			require.Error(t, err)
			t.Log(err)
			var cerr *cosign.Error
			require.ErrorAs(t, err, &cerr)
			assert.Equal(t, tc.kind, cerr.Kind, "%v", err)
			assert.NotContains(t, err.Error(), "\n")
			if tc.noBlobRead {
				assert.Zero(t, reg.count("GET /v2/", "/blobs/"), "blob GETs")
			}
			for _, m := range tc.message {
				m = strings.ReplaceAll(m, "REF", ref.DigestStr())
				m = strings.ReplaceAll(m, "FP:ci", fingerprint(t, ci.Public()))
				assert.Contains(t, err.Error(), m)
			}
		})
	}
}

// TestVerifyKeyTypes: every supported type of key, in both layouts.
func TestVerifyKeyTypes(t *testing.T) {
	p256, _, err := cosigner.GenerateKey()
	require.NoError(t, err)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	require.NoError(t, err)
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	reg := newRegistry(t, true)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		key  crypto.Signer
	}{{"p256", p256}, {"p384", p384}, {"ed25519", ed}, {"rsa2048", rsaKey}} {
		for _, layout := range []string{cosign.LayoutTag, cosign.LayoutReferrer} {
			t.Run(tc.name+"/"+layout, func(t *testing.T) {
				ref := reg.push(t, tc.name+"-"+layout, "v1")
				sign := cosigner.SignTag
				if layout == cosign.LayoutReferrer {
					sign = cosigner.SignReferrer
				}
				require.NoError(t, sign(ctx, ref, tc.key, reg.options()...))
				keys := keysOf(t, map[string]crypto.Signer{"k.pub": tc.key})
				signer, err := cosign.Verify(ctx, reg.puller(t), ref, keys, cosign.Limits{})
				require.NoError(t, err)
				assert.Equal(t, &cosign.Signer{Key: "k.pub", Fingerprint: fingerprint(t, tc.key.Public()), Layout: layout}, signer)
			})
		}
	}
}

// TestVerifyTooMany: 1,000 signatures are refused from their listing,
// before any is read.
func TestVerifyTooMany(t *testing.T) {
	reg := newRegistry(t, true)
	ctx := context.Background()
	ci, _, err := cosigner.GenerateKey()
	require.NoError(t, err)
	ref := reg.push(t, "app", "v1")

	// 1,000 layers of the .sig image, all the same payload (pushed once).
	require.NoError(t, cosigner.SignTag(ctx, ref, ci, reg.options()...))
	tag := cosigner.SigTag(ref)
	desc, err := remote.Get(tag, reg.options()...)
	require.NoError(t, err)
	var m v1.Manifest
	require.NoError(t, json.Unmarshal(desc.Manifest, &m))
	for len(m.Layers) < 1000 {
		m.Layers = append(m.Layers, m.Layers[0])
	}
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, remote.Put(tag, cosigner.RawManifest{Raw: raw, Type: desc.MediaType}, reg.options()...))

	reg.reset()
	_, err = cosign.Verify(ctx, reg.puller(t), ref, keysOf(t, map[string]crypto.Signer{"ci.pub": ci}), cosign.Limits{})
	var cerr *cosign.Error
	require.ErrorAs(t, err, &cerr)
	assert.Equal(t, cosign.KindTooMany, cerr.Kind)
	assert.Contains(t, err.Error(), "1000 signatures")
	assert.Contains(t, err.Error(), fmt.Sprintf("limit of %d", cosign.DefaultMaxSignatures))
	assert.Less(t, reg.count("GET /v2/", "/blobs/"), 10, "blob GETs")
	assert.LessOrEqual(t, reg.count("", "/v2/app/"), 5, "requests")
}

// TestVerifyLimitWhileReading: a registry that sends more than a blob's
// descriptor says is cut at the descriptor's size.
func TestVerifyLimitWhileReading(t *testing.T) {
	reg := newRegistry(t, true)
	ctx := context.Background()
	ci, _, err := cosigner.GenerateKey()
	require.NoError(t, err)
	ref := reg.push(t, "app", "v1")
	payload := cosigner.Payload(ref.Context(), hashOf(t, ref))
	require.NoError(t, cosigner.SignTagPayload(ctx, ref, payload, ci, reg.options()...))
	sum := sha256.Sum256(payload)
	blob := "/blobs/sha256:" + hex.EncodeToString(sum[:])

	reg.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, blob) {
			return false
		}
		chunk := []byte(strings.Repeat("x", 32<<10))
		for range 256 { // 8 MiB, unless the client stops reading
			if _, err := w.Write(chunk); err != nil {
				break
			}
		}
		return true
	})
	_, err = cosign.Verify(ctx, reg.puller(t), ref, keysOf(t, map[string]crypto.Signer{"ci.pub": ci}), cosign.Limits{})
	var cerr *cosign.Error
	require.ErrorAs(t, err, &cerr)
	assert.Equal(t, cosign.KindInvalid, cerr.Kind, "%v", err)
	assert.Contains(t, err.Error(), "bytes are not those of its descriptor")
}

// TestVerifyRegistryError: a registry failure is KindRegistry, with
// go-containerregistry's error inside, and no more than a bounded echo of
// what the registry said.
func TestVerifyRegistryError(t *testing.T) {
	reg := newRegistry(t, true)
	ctx := context.Background()
	ci, _, err := cosigner.GenerateKey()
	require.NoError(t, err)
	ref := reg.push(t, "app", "v1")
	reg.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, ".sig") {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"errors":[{"code":"DENIED","message":"%s"}]}`, strings.Repeat("secret-ish registry text ", 400))
		return true
	})
	_, err = cosign.Verify(ctx, reg.puller(t), ref, keysOf(t, map[string]crypto.Signer{"ci.pub": ci}), cosign.Limits{})
	var cerr *cosign.Error
	require.ErrorAs(t, err, &cerr)
	assert.Equal(t, cosign.KindRegistry, cerr.Kind)
	var terr *transport.Error
	require.ErrorAs(t, err, &terr)
	assert.Equal(t, http.StatusForbidden, terr.StatusCode)
	assert.Less(t, len(err.Error()), 600, err.Error())
	assert.NotContains(t, err.Error(), "\n")
}

// TestVerifyAttestationIsNotASignature: a bundle of another predicate
// type, even by a trusted key and of the right digest, is not a signature.
func TestVerifyAttestationIsNotASignature(t *testing.T) {
	reg := newRegistry(t, true)
	ctx := context.Background()
	ci, _, err := cosigner.GenerateKey()
	require.NoError(t, err)
	ref := reg.push(t, "app", "v1")
	slsa, err := cosigner.StatementBundle(ctx, ref.Context(), hashOf(t, ref), "https://slsa.dev/provenance/v1", ci)
	require.NoError(t, err)
	require.NoError(t, cosigner.AttachReferrer(ctx, ref, slsa, reg.options()...))

	_, err = cosign.Verify(ctx, reg.puller(t), ref, keysOf(t, map[string]crypto.Signer{"ci.pub": ci}), cosign.Limits{})
	var cerr *cosign.Error
	require.ErrorAs(t, err, &cerr)
	assert.Equal(t, cosign.KindNoSignature, cerr.Kind, "%v", err)
}

// An attestation whose referrer manifest does not say its predicate type
// is read, and skipped once its statement shows it is not a signature.
func TestVerifyUnannotatedAttestationIsNotASignature(t *testing.T) {
	reg := newRegistry(t, true)
	ctx := context.Background()
	ci, _, err := cosigner.GenerateKey()
	require.NoError(t, err)
	ref := reg.push(t, "app", "v1")
	slsa, err := cosigner.StatementBundle(ctx, ref.Context(), hashOf(t, ref), "https://slsa.dev/provenance/v1", ci)
	require.NoError(t, err)
	require.NoError(t, cosigner.AttachReferrerUnannotated(ctx, ref, slsa, reg.options()...))

	_, err = cosign.Verify(ctx, reg.puller(t), ref, keysOf(t, map[string]crypto.Signer{"ci.pub": ci}), cosign.Limits{})
	var cerr *cosign.Error
	require.ErrorAs(t, err, &cerr)
	assert.Equal(t, cosign.KindNoSignature, cerr.Kind, "%v", err)
}

// TestVerifyArguments: what Verify refuses before any request.
func TestVerifyArguments(t *testing.T) {
	reg := newRegistry(t, true)
	ci, _, err := cosigner.GenerateKey()
	require.NoError(t, err)
	keys := keysOf(t, map[string]crypto.Signer{"ci.pub": ci})
	ref := reg.push(t, "app", "v1")
	reg.reset()
	for name, call := range map[string]func() error{
		"no puller": func() error {
			_, err := cosign.Verify(context.Background(), nil, ref, keys, cosign.Limits{})
			return err
		},
		"no keys": func() error {
			_, err := cosign.Verify(context.Background(), reg.puller(t), ref, nil, cosign.Limits{})
			return err
		},
	} {
		err := call()
		var cerr *cosign.Error
		require.True(t, errors.As(err, &cerr), name)
		assert.Equal(t, cosign.KindInvalid, cerr.Kind, name)
	}
	assert.Zero(t, reg.count("", ""))
}
