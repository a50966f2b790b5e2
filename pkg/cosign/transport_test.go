package cosign_test

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/internal/cosigner"
	"github.com/kumodo/convoy-apiserver/pkg/cosign"
)

// serveLarge answers n bytes (spaces: JSON white space) of media type mt,
// with a Content-Length or, chunked, without one, until the client stops
// reading.
func serveLarge(w http.ResponseWriter, mt types.MediaType, n int, withLength bool) {
	w.Header().Set("Content-Type", string(mt))
	if withLength {
		w.Header().Set("Content-Length", strconv.Itoa(n))
	}
	w.WriteHeader(http.StatusOK)
	chunk := bytes.Repeat([]byte(" "), 32<<10)
	for sent := 0; sent < n; sent += len(chunk) {
		if _, err := w.Write(chunk[:min(len(chunk), n-sent)]); err != nil {
			return
		}
		if !withLength {
			w.(http.Flusher).Flush()
		}
	}
}

// TestVerifyManifestBound: a registry that serves a signature tag's
// manifest or a referrers index of 30 MiB gets it refused at the limit
// (1 MiB), by its Content-Length before its body is read, or at the first
// byte past the limit as it is read: the client reads no more than the
// limit of it.
func TestVerifyManifestBound(t *testing.T) {
	const size = 30 << 20
	limit := int64(cosign.DefaultMaxBytes)
	byLength := "bytes, more than the limit of " + strconv.FormatInt(limit, 10) + " bytes (its Content-Length: refused before it was read)"
	asRead := "is more than the limit of " + strconv.FormatInt(limit, 10) + " bytes (cut at byte " + strconv.FormatInt(limit+1, 10) + " as it was read"
	cases := []struct {
		name      string
		referrers bool
		// serves tells the request served large: its path's suffix or
		// part.
		serves     func(path, hex string) bool
		mediaType  types.MediaType
		withLength bool
		// noTag: no signature tag, so that the referrers are read.
		noTag   bool
		message []string
	}{
		{
			name: "signature tag manifest, Content-Length", referrers: true, withLength: true, mediaType: types.OCIManifestSchema1,
			serves:  func(path, hex string) bool { return strings.HasSuffix(path, "/manifests/sha256-"+hex+".sig") },
			message: []string{"the manifest of the signature tag ", ".sig is 31457280 " + byLength},
		},
		{
			name: "signature tag manifest, chunked", referrers: true, mediaType: types.OCIManifestSchema1,
			serves:  func(path, hex string) bool { return strings.HasSuffix(path, "/manifests/sha256-"+hex+".sig") },
			message: []string{"the manifest of the signature tag ", ".sig " + asRead},
		},
		{
			name: "referrers index, Content-Length", referrers: true, withLength: true, noTag: true, mediaType: types.OCIImageIndex,
			serves:  func(path, hex string) bool { return strings.HasSuffix(path, "/referrers/sha256:"+hex) },
			message: []string{"the referrers index of sha256:", " is 31457280 " + byLength},
		},
		{
			name: "referrers index, chunked", referrers: true, noTag: true, mediaType: types.OCIImageIndex,
			serves:  func(path, hex string) bool { return strings.HasSuffix(path, "/referrers/sha256:"+hex) },
			message: []string{"the referrers index of sha256:", asRead},
		},
		{
			name: "referrers tag schema's index, chunked", referrers: false, noTag: true, mediaType: types.OCIImageIndex,
			serves:  func(path, hex string) bool { return strings.HasSuffix(path, "/manifests/sha256-"+hex) },
			message: []string{"the referrers index of sha256:", asRead},
		},
	}
	ci, _, err := cosigner.GenerateKey()
	require.NoError(t, err)
	keys := keysOf(t, map[string]crypto.Signer{"ci.pub": ci})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := newRegistry(t, tc.referrers)
			ctx := context.Background()
			ref := reg.push(t, "app", "v1")
			require.NoError(t, cosigner.SignTag(ctx, ref, ci, reg.options()...))
			require.NoError(t, cosigner.SignReferrer(ctx, ref, ci, reg.options()...))
			hex := hashOf(t, ref).Hex
			var served atomic.Int32
			reg.setHook(func(w http.ResponseWriter, r *http.Request) bool {
				switch {
				case r.Method == http.MethodGet && tc.serves(r.URL.Path, hex):
					served.Add(1)
					serveLarge(w, tc.mediaType, size, tc.withLength)
					return true
				case tc.noTag && strings.HasSuffix(r.URL.Path, ".sig"):
					w.WriteHeader(http.StatusNotFound)
					return true
				}
				return false
			})
			reg.reset()
			reg.read.Store(0)

			_, err := cosign.Verify(ctx, reg.puller(t), ref, keys, cosign.Limits{})
			t.Log(err)
			var cerr *cosign.Error
			require.ErrorAs(t, err, &cerr)
			assert.Equal(t, cosign.KindTooLarge, cerr.Kind, "%v", err)
			for _, m := range tc.message {
				assert.Contains(t, err.Error(), m)
			}
			assert.Equal(t, int32(1), served.Load(), "the large answer is asked for once, not retried")
			read := reg.read.Load()
			if tc.withLength {
				assert.Less(t, read, int64(4<<10), "bytes read of the registry's answers")
			} else {
				assert.LessOrEqual(t, read, limit+1+4<<10, "bytes read of the registry's answers")
			}
			assert.Zero(t, reg.count("GET /v2/", "/blobs/"), "blob GETs")
		})
	}
}

// TestVerifyRequiresTransport: a registry client that does not read
// through cosign.Transport would read manifests whole before their size is
// checked: Verify refuses to go on, with an error of no Kind.
func TestVerifyRequiresTransport(t *testing.T) {
	reg := newRegistry(t, true)
	ctx := context.Background()
	ci, _, err := cosigner.GenerateKey()
	require.NoError(t, err)
	ref := reg.push(t, "app", "v1")
	require.NoError(t, cosigner.SignTag(ctx, ref, ci, reg.options()...))
	puller, err := remote.NewPuller(reg.options()...)
	require.NoError(t, err)

	_, err = cosign.Verify(ctx, puller, ref, keysOf(t, map[string]crypto.Signer{"ci.pub": ci}), cosign.Limits{})
	require.Error(t, err)
	var cerr *cosign.Error
	assert.False(t, errors.As(err, &cerr), "%v", err)
	assert.ErrorContains(t, err, "does not read through cosign.Transport")
}
