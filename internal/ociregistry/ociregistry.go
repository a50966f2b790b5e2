// Package ociregistry runs an OCI registry on a loopback address, for the
// tests and `make run`: go-containerregistry's pkg/registry (an existing
// registry implementation, in memory), with basic authentication when asked,
// a record of the requests it served, and a hook to misbehave. It pushes Helm
// charts as helm push does, and bundles of manifests as flux push artifact
// does, with go-containerregistry's client.
package ociregistry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types of what Push* write.
const (
	HelmConfigMediaType   = "application/vnd.cncf.helm.config.v1+json"
	HelmChartMediaType    = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	FluxConfigMediaType   = "application/vnd.cncf.flux.config.v1+json"
	FluxContentMediaType  = "application/vnd.cncf.flux.content.v1.tar+gzip"
	ImageConfigMediaType  = "application/vnd.oci.image.config.v1+json"
	ImageLayerMediaType   = "application/vnd.oci.image.layer.v1.tar+gzip"
	unknownLayerMediaType = "application/vnd.example.unknown"
)

// Options of a registry.
type Options struct {
	// TLS serves https with a certificate of its own (CA gives it);
	// else plain http.
	TLS bool
	// Username and Password, when set, are required (basic
	// authentication) for every request but /v2/ pushes from this package.
	Username, Password string
	// Hook, when set, sees every request first and answers it itself when
	// it returns true.
	Hook func(w http.ResponseWriter, r *http.Request) bool
	// NoReferrers turns the OCI referrers API off (404), as on registries
	// that predate it: clients fall back to the sha256-HEX tag schema.
	NoReferrers bool
}

// Request is one request the registry got.
type Request struct {
	Method, Path string
	// Authorized tells whether it carried an Authorization header.
	Authorized bool
}

// Server is a running registry.
type Server struct {
	srv  *httptest.Server
	opts Options

	mu       sync.Mutex
	requests []Request
}

// Start starts a registry on 127.0.0.1.
func Start(opts Options) (*Server, error) {
	s := &Server{opts: opts}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(!opts.NoReferrers))
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Authorized: r.Header.Get("Authorization") != ""})
		s.mu.Unlock()
		if opts.Hook != nil && opts.Hook(w, r) {
			return
		}
		if opts.Username != "" {
			user, pass, ok := r.BasicAuth()
			if !ok || user != opts.Username || pass != opts.Password {
				w.Header().Set("WWW-Authenticate", `Basic realm="convoy-test"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
		}
		reg.ServeHTTP(w, r)
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.srv.Listener.Close()
	s.srv.Listener = ln
	if opts.TLS {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	return s, nil
}

// Close stops the registry.
func (s *Server) Close() { s.srv.Close() }

// Host is the registry's HOST:PORT.
func (s *Server) Host() string { return s.srv.Listener.Addr().String() }

// URL is oci://HOST:PORT/repo.
func (s *Server) URL(repo string) string { return "oci://" + s.Host() + "/" + repo }

// CA is the PEM of the certificate a TLS registry serves (nil without TLS).
func (s *Server) CA() []byte {
	if s.srv.Certificate() == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
}

// DockerConfigJSON is a .dockerconfigjson with user and password for the
// registry.
func (s *Server) DockerConfigJSON(user, password string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	data, _ := json.Marshal(map[string]any{"auths": map[string]any{s.Host(): map[string]string{"auth": auth}}})
	return data
}

// Requests returns the requests served so far, and forgets them.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.requests)
	s.requests = nil
	return out
}

// options are the client options of a push.
func (s *Server) options(ctx context.Context) []remote.Option {
	opts := []remote.Option{remote.WithContext(ctx)}
	if s.opts.Username != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: s.opts.Username, Password: s.opts.Password}))
	}
	if s.opts.TLS {
		pool := x509.NewCertPool()
		pool.AddCert(s.srv.Certificate())
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig.RootCAs = pool
		t.Proxy = nil
		opts = append(opts, remote.WithTransport(t))
	}
	return opts
}

// ClientOptions are the options of a client of the registry (its
// credentials and certificate), for tests that write to it (signatures).
func (s *Server) ClientOptions(ctx context.Context) []remote.Option { return s.options(ctx) }

// Digest is repo@digest on the registry.
func (s *Server) Digest(repo, digest string) (name.Digest, error) {
	var opts []name.Option
	if !s.opts.TLS {
		opts = append(opts, name.Insecure)
	}
	return name.NewDigest(s.Host()+"/"+repo+"@"+digest, opts...)
}

// reference is the tag of repo on the registry.
func (s *Server) reference(repo, tag string) (name.Tag, error) {
	var opts []name.Option
	if !s.opts.TLS {
		opts = append(opts, name.Insecure)
	}
	return name.NewTag(s.Host()+"/"+repo+":"+tag, opts...)
}

// PushChart pushes a packaged chart as helm push does (config: the chart's
// metadata; one layer of HelmChartMediaType) to repo:tag, and returns the
// manifest's digest.
func (s *Server) PushChart(ctx context.Context, repo, tag string, tgz, chartMetadataJSON []byte) (string, error) {
	return s.push(ctx, repo, tag, static.NewLayer(chartMetadataJSON, HelmConfigMediaType), static.NewLayer(tgz, HelmChartMediaType))
}

// PushBundle pushes files of manifests as one tar+gzip layer, as flux push
// artifact does, to repo:tag, and returns the manifest's digest.
func (s *Server) PushBundle(ctx context.Context, repo, tag string, files map[string]string) (string, error) {
	data, err := TarGz(files)
	if err != nil {
		return "", err
	}
	return s.PushBundleLayer(ctx, repo, tag, data)
}

// PushBundleLayer pushes layer, a tar+gzip archive as it is (a hostile one
// for the tests: see SparseTarGz), as the one layer of a bundle of
// manifests, to repo:tag, and returns the manifest's digest.
func (s *Server) PushBundleLayer(ctx context.Context, repo, tag string, layer []byte) (string, error) {
	return s.push(ctx, repo, tag, static.NewLayer([]byte("{}"), FluxConfigMediaType), static.NewLayer(layer, FluxContentMediaType))
}

// PushImage pushes an artifact that is neither a chart nor a bundle: an
// image config and a layer of an unknown type.
func (s *Server) PushImage(ctx context.Context, repo, tag string) (string, error) {
	return s.push(ctx, repo, tag, static.NewLayer([]byte(`{"architecture":"amd64","os":"linux"}`), ImageConfigMediaType),
		static.NewLayer([]byte("not a bundle"), unknownLayerMediaType))
}

// push writes the config and the layers, then an OCI manifest of them.
func (s *Server) push(ctx context.Context, repo, tag string, config v1.Layer, layers ...v1.Layer) (string, error) {
	ref, err := s.reference(repo, tag)
	if err != nil {
		return "", err
	}
	opts := s.options(ctx)
	descriptor := func(l v1.Layer) (v1.Descriptor, error) {
		d, err := l.Digest()
		if err != nil {
			return v1.Descriptor{}, err
		}
		size, err := l.Size()
		if err != nil {
			return v1.Descriptor{}, err
		}
		mt, err := l.MediaType()
		return v1.Descriptor{MediaType: mt, Size: size, Digest: d}, err
	}
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1}
	for i, l := range append([]v1.Layer{config}, layers...) {
		if err := remote.WriteLayer(ref.Context(), l, opts...); err != nil {
			return "", fmt.Errorf("pushing a blob: %w", err)
		}
		d, err := descriptor(l)
		if err != nil {
			return "", err
		}
		if i == 0 {
			m.Config = d
		} else {
			m.Layers = append(m.Layers, d)
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	if err := remote.Put(ref, rawManifest{raw}, opts...); err != nil {
		return "", fmt.Errorf("pushing the manifest: %w", err)
	}
	h, _, err := v1.SHA256(bytes.NewReader(raw))
	return h.String(), err
}

type rawManifest struct{ raw []byte }

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// TarGz is a tar+gzip archive of files, in name order.
func TarGz(files map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
