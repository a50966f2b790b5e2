package ociregistry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// start starts a registry, closed with the test.
func start(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := Start(opts)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// get sends a GET of path to s with client (a plain one when nil), with
// basic authentication when user is set, and returns the status and body.
func get(t *testing.T, s *Server, client *http.Client, path, user, password string) (int, http.Header, []byte) {
	t.Helper()
	scheme := "http"
	if s.opts.TLS {
		scheme = "https"
	}
	if client == nil {
		client = &http.Client{Transport: &http.Transport{Proxy: nil}}
	}
	req, err := http.NewRequest(http.MethodGet, scheme+"://"+s.Host()+path, nil)
	require.NoError(t, err)
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, body
}

// untar reads a tar+gzip archive into its entries' headers and contents,
// in order.
func untar(t *testing.T, data []byte) ([]*tar.Header, []string) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	var headers []*tar.Header
	var contents []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return headers, contents
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		headers, contents = append(headers, h), append(contents, string(b))
	}
}

// The registry serves on 127.0.0.1 only, and names itself by that address.
func TestServesOnLoopback(t *testing.T) {
	s := start(t, Options{})
	host, _, err := net.SplitHostPort(s.Host())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	assert.Equal(t, "oci://"+s.Host()+"/charts/web", s.URL("charts/web"))
	assert.Nil(t, s.CA(), "plain http has no certificate")
	code, _, _ := get(t, s, nil, "/v2/", "", "")
	assert.Equal(t, http.StatusOK, code)
}

// Each Push writes what its tool would (helm push, flux push artifact, an
// image) and answers the digest the registry serves the manifest by.
func TestPushes(t *testing.T) {
	ctx := context.Background()
	s := start(t, Options{})
	tests := []struct {
		name         string
		push         func(repo string) (string, error)
		config, last types.MediaType
		content      string // of the last layer
	}{
		{name: "chart", push: func(repo string) (string, error) {
			return s.PushChart(ctx, repo, "1.0.0", []byte("chart bytes"), []byte(`{"name":"web"}`))
		}, config: HelmConfigMediaType, last: HelmChartMediaType, content: "chart bytes"},
		{name: "bundle", push: func(repo string) (string, error) {
			return s.PushBundle(ctx, repo, "1.0.0", map[string]string{"a.yaml": "kind: A"})
		}, config: FluxConfigMediaType, last: FluxContentMediaType},
		{name: "bundle layer as it is", push: func(repo string) (string, error) {
			return s.PushBundleLayer(ctx, repo, "1.0.0", []byte("not even gzip"))
		}, config: FluxConfigMediaType, last: FluxContentMediaType, content: "not even gzip"},
		{name: "image", push: func(repo string) (string, error) {
			return s.PushImage(ctx, repo, "1.0.0")
		}, config: ImageConfigMediaType, last: unknownLayerMediaType, content: "not a bundle"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo := "test/" + strings.ReplaceAll(tc.name, " ", "-")
			digest, err := tc.push(repo)
			require.NoError(t, err)
			tag, err := name.NewTag(s.Host()+"/"+repo+":1.0.0", name.Insecure)
			require.NoError(t, err)
			desc, err := remote.Get(tag, s.ClientOptions(ctx)...)
			require.NoError(t, err)
			assert.Equal(t, digest, desc.Digest.String())
			assert.Equal(t, types.OCIManifestSchema1, desc.MediaType)

			var m v1.Manifest
			require.NoError(t, json.Unmarshal(desc.Manifest, &m))
			assert.Equal(t, tc.config, m.Config.MediaType)
			require.Len(t, m.Layers, 1)
			assert.Equal(t, tc.last, m.Layers[0].MediaType)

			ref, err := s.Digest(repo, m.Layers[0].Digest.String())
			require.NoError(t, err)
			layer, err := remote.Layer(ref, s.ClientOptions(ctx)...)
			require.NoError(t, err)
			rc, err := layer.Compressed()
			require.NoError(t, err)
			data, err := io.ReadAll(rc)
			require.NoError(t, err)
			require.NoError(t, rc.Close())
			if tc.content != "" {
				assert.Equal(t, tc.content, string(data))
			} else {
				_, contents := untar(t, data)
				assert.Equal(t, []string{"kind: A"}, contents)
			}
		})
	}
}

// With TLS the registry serves https with a certificate of its own, which
// CA gives and the pushes trust; a client that does not trust it is
// refused.
func TestTLS(t *testing.T) {
	ctx := context.Background()
	s := start(t, Options{TLS: true})
	block, _ := pem.Decode(s.CA())
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)

	_, err = s.PushChart(ctx, "charts/web", "1", []byte("chart"), []byte(`{}`))
	require.NoError(t, err, "a push trusts the registry's certificate")

	pool := x509.NewCertPool()
	pool.AddCert(cert)
	trusting := &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	code, _, _ := get(t, s, trusting, "/v2/", "", "")
	assert.Equal(t, http.StatusOK, code)

	req, err := http.NewRequest(http.MethodGet, "https://"+s.Host()+"/v2/", nil)
	require.NoError(t, err)
	_, err = (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	var unknown x509.UnknownAuthorityError
	assert.ErrorAs(t, err, &unknown, "a client without the CA")
}

// With a user and a password every request needs them (basic
// authentication); the request log says which carried credentials.
func TestBasicAuth(t *testing.T) {
	ctx := context.Background()
	s := start(t, Options{Username: "alice", Password: "s3cret"})
	_, err := s.PushChart(ctx, "charts/web", "1", []byte("chart"), []byte(`{}`))
	require.NoError(t, err, "the pushes carry the credentials")
	s.Requests()

	tests := []struct {
		name, user, password string
		code                 int
	}{
		{name: "none", code: http.StatusUnauthorized},
		{name: "a wrong password", user: "alice", password: "guess", code: http.StatusUnauthorized},
		{name: "another user", user: "bob", password: "s3cret", code: http.StatusUnauthorized},
		{name: "the right ones", user: "alice", password: "s3cret", code: http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, header, body := get(t, s, nil, "/v2/charts/web/manifests/1", tc.user, tc.password)
			assert.Equal(t, tc.code, code, "%s", body)
			if tc.code == http.StatusUnauthorized {
				assert.Equal(t, `Basic realm="convoy-test"`, header.Get("WWW-Authenticate"))
				assert.Contains(t, string(body), "UNAUTHORIZED")
			}
			requests := s.Requests()
			require.Len(t, requests, 1)
			assert.Equal(t, Request{Method: http.MethodGet, Path: "/v2/charts/web/manifests/1", Authorized: tc.user != ""}, requests[0])
		})
	}

	var config struct {
		Auths map[string]struct{ Auth string } `json:"auths"`
	}
	require.NoError(t, json.Unmarshal(s.DockerConfigJSON("alice", "s3cret"), &config))
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("alice:s3cret")), config.Auths[s.Host()].Auth)
}

// The referrers API lists the manifests whose subject is a digest; with
// NoReferrers it is not served, as on registries that predate it.
func TestReferrers(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		noReferrers bool
		code        int
	}{
		{name: "served", code: http.StatusOK},
		{name: "off", noReferrers: true, code: http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, Options{NoReferrers: tc.noReferrers})
			digest, err := s.PushChart(ctx, "charts/web", "1", []byte("chart"), []byte(`{}`))
			require.NoError(t, err)
			subject, err := v1.NewHash(digest)
			require.NoError(t, err)
			referrer := pushReferrer(t, s, "charts/web", v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: subject, Size: 1})

			code, _, body := get(t, s, nil, "/v2/charts/web/referrers/"+digest, "", "")
			require.Equal(t, tc.code, code, "%s", body)
			if tc.noReferrers {
				return
			}
			var index v1.IndexManifest
			require.NoError(t, json.Unmarshal(body, &index))
			assert.Equal(t, types.OCIImageIndex, index.MediaType)
			require.Len(t, index.Manifests, 1)
			assert.Equal(t, referrer, index.Manifests[0].Digest.String())
			assert.Equal(t, "application/vnd.example.signature", index.Manifests[0].ArtifactType)
		})
	}
}

// pushReferrer pushes an artifact whose subject is subject to repo, by
// digest, and returns its digest.
func pushReferrer(t *testing.T, s *Server, repo string, subject v1.Descriptor) string {
	t.Helper()
	ctx := context.Background()
	config := static.NewLayer([]byte("{}"), "application/vnd.example.signature")
	ref, err := s.reference(repo, "unused")
	require.NoError(t, err)
	require.NoError(t, remote.WriteLayer(ref.Context(), config, s.ClientOptions(ctx)...))
	d, err := config.Digest()
	require.NoError(t, err)
	raw, err := json.Marshal(v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1,
		Config: v1.Descriptor{MediaType: "application/vnd.example.signature", Digest: d, Size: 2}, Layers: []v1.Descriptor{}, Subject: &subject})
	require.NoError(t, err)
	h, _, err := v1.SHA256(bytes.NewReader(raw))
	require.NoError(t, err)
	byDigest, err := s.Digest(repo, h.String())
	require.NoError(t, err)
	require.NoError(t, remote.Put(byDigest, rawManifest{raw}, s.ClientOptions(ctx)...))
	return h.String()
}

// The hook sees every request first (before the credentials are checked)
// and answers those it wants; the log holds them all; Requests forgets
// what it returned.
func TestHookAndRequests(t *testing.T) {
	s := start(t, Options{Username: "alice", Password: "s3cret", Hook: func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, "/teapot") {
			w.WriteHeader(http.StatusTeapot)
			return true
		}
		return false
	}})
	code, _, _ := get(t, s, nil, "/v2/teapot", "", "")
	assert.Equal(t, http.StatusTeapot, code, "answered by the hook, without credentials")
	code, _, _ = get(t, s, nil, "/v2/", "", "")
	assert.Equal(t, http.StatusUnauthorized, code, "passed on")
	assert.Equal(t, []Request{{Method: http.MethodGet, Path: "/v2/teapot"}, {Method: http.MethodGet, Path: "/v2/"}}, s.Requests())
	assert.Empty(t, s.Requests())
}

// TarGz writes the files in name order, the same bytes each time.
func TestTarGz(t *testing.T) {
	files := map[string]string{"b/z.yaml": "z", "a.yaml": "a", "b/c.yaml": "c"}
	data, err := TarGz(files)
	require.NoError(t, err)
	again, err := TarGz(files)
	require.NoError(t, err)
	assert.Equal(t, data, again)
	headers, contents := untar(t, data)
	var names []string
	for _, h := range headers {
		names = append(names, h.Name)
		assert.Equal(t, byte(tar.TypeReg), h.Typeflag)
	}
	assert.Equal(t, []string{"a.yaml", "b/c.yaml", "b/z.yaml"}, names)
	assert.Equal(t, []string{"a", "c", "z"}, contents)
}

// TarGzEntries writes the entries in order: files, links, and a header
// that claims bytes the archive does not hold.
func TestTarGzEntries(t *testing.T) {
	data, err := TarGzEntries(
		TarEntry{Name: "a.yaml", Data: "a"},
		TarEntry{Name: "link", Symlink: "/etc/passwd"},
		TarEntry{Name: "hard", Hardlink: "a.yaml"},
	)
	require.NoError(t, err)
	headers, contents := untar(t, data)
	require.Len(t, headers, 3)
	assert.Equal(t, []string{"a", "", ""}, contents)
	assert.Equal(t, byte(tar.TypeSymlink), headers[1].Typeflag)
	assert.Equal(t, "/etc/passwd", headers[1].Linkname)
	assert.Equal(t, byte(tar.TypeLink), headers[2].Typeflag)
	assert.Equal(t, "a.yaml", headers[2].Linkname)

	claim, err := TarGzEntries(TarEntry{Name: "big", Claim: 1 << 40})
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(claim))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	h, err := tr.Next()
	require.NoError(t, err)
	assert.Equal(t, int64(1<<40), h.Size)
	_, err = io.Copy(io.Discard, tr)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "the archive ends after the header")
}

// Go's archive/tar reads each sparse format as a file of size NUL bytes,
// from a few hundred bytes of archive, whatever the size (past 8 GiB too,
// in base-256).
func TestSparseTarGz(t *testing.T) {
	for _, format := range SparseFormats {
		for _, size := range []int64{3000, 16 << 30} {
			t.Run(fmt.Sprintf("%s, %d bytes", format, size), func(t *testing.T) {
				data, err := SparseTarGz(format, "holes.bin", size)
				require.NoError(t, err)
				assert.Less(t, len(data), 1024, "a few hundred bytes")
				zr, err := gzip.NewReader(bytes.NewReader(data))
				require.NoError(t, err)
				tr := tar.NewReader(zr)
				h, err := tr.Next()
				require.NoError(t, err)
				assert.Equal(t, "holes.bin", h.Name)
				assert.Equal(t, size, h.Size)
				want := byte(tar.TypeReg)
				if format == SparseOldGNU {
					want = tar.TypeGNUSparse
				}
				assert.Equal(t, want, h.Typeflag)
				head, err := io.ReadAll(io.LimitReader(tr, 4096))
				require.NoError(t, err)
				assert.Equal(t, make([]byte, min(size, 4096)), head, "holes read as NUL bytes")
			})
		}
	}
	_, err := SparseTarGz("zip", "x", 1)
	assert.Error(t, err)
}
