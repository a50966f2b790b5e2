// Package oci reads the OCI artifacts a Release may name: a Helm chart as
// helm push writes it, or a bundle of files in one tar+gzip layer, pulled
// by digest through a registry client the caller gives (its transport: the
// address policy, the TLS settings; its credentials), within a limit, and
// verified against their descriptors. Its failures are an *Error of a
// Kind, for the caller to classify (pkg/source maps each to a reason); a
// failure of the registry is KindRegistry, go-containerregistry's error
// inside.
package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/errtext"
)

// Media types of the OCI artifacts a Release may name.
const (
	// A Helm chart, as helm push writes it.
	HelmConfigMediaType = "application/vnd.cncf.helm.config.v1+json"
	HelmChartMediaType  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	// helmLegacyChartMediaType is what Helm 3.0-3.7 pushed.
	helmLegacyChartMediaType = "application/tar+gzip"
)

// BundleMediaTypes are the layer media types of a bundle of files (plain
// manifests, a kustomize overlay, a chart's directory): one tar+gzip layer,
// as flux push artifact, oras push or any image builder writes it.
var BundleMediaTypes = []string{
	"application/vnd.cncf.flux.content.v1.tar+gzip",
	"application/vnd.oci.image.layer.v1.tar+gzip",
	"application/vnd.docker.image.rootfs.diff.tar.gzip",
}

// Kind is what an Error is.
type Kind int

const (
	// KindInvalid: not an oci:// URL of a repository.
	KindInvalid Kind = iota + 1
	// KindUnsupported: neither a Helm chart nor a bundle of files.
	KindUnsupported
	// KindTooLarge: a layer past the limit (--max-artifact-bytes).
	KindTooLarge
	// KindDigestMismatch: bytes that are not those of their descriptor.
	KindDigestMismatch
	// KindRegistry: the registry failed (Err is the registry client's
	// error); Message says at which step.
	KindRegistry
)

// Error is a failure of this package.
type Error struct {
	Kind    Kind
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Kind == KindRegistry && e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

func errorf(kind Kind, err error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), Err: err}
}

// Repository parses oci://HOST[:PORT]/PATH; with allowPlainLoopback, a
// loopback host is reached over plain http (local development). The
// caller refuses user information in url first.
func Repository(u string, allowPlainLoopback bool) (name.Repository, error) {
	ref, ok := strings.CutPrefix(u, "oci://")
	if !ok {
		return name.Repository{}, errorf(KindInvalid, nil, "%s is not an oci:// URL", u)
	}
	var opts []name.Option
	if allowPlainLoopback {
		if host, _, _ := strings.Cut(ref, "/"); egress.IsLoopbackHost(hostOnly(host)) {
			opts = append(opts, name.Insecure)
		}
	}
	repo, err := name.NewRepository(ref, append(opts, name.StrictValidation)...)
	if err != nil {
		return name.Repository{}, errorf(KindInvalid, err, "%s is not a repository: %v", u, err)
	}
	return repo, nil
}

// hostOnly is host without its port.
func hostOnly(hostport string) string {
	if strings.HasPrefix(hostport, "[") {
		if i := strings.Index(hostport, "]"); i > 0 {
			return hostport[1:i]
		}
	}
	host, _, _ := strings.Cut(hostport, ":")
	return host
}

// Layer reads the manifest of ref through puller, picks its chart layer (a
// Helm chart: isChart) or its one bundle layer, refuses a layer whose
// descriptor says more than limit bytes before it is downloaded, and
// downloads it, verified against its descriptor's size and digest.
func Layer(ctx context.Context, puller *remote.Puller, ref name.Digest, limit int64) (data []byte, isChart bool, err error) {
	desc, err := puller.Get(ctx, ref)
	if err != nil {
		return nil, false, &Error{Kind: KindRegistry, Message: "reading the manifest", Err: err}
	}
	var manifest v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &manifest); err != nil {
		return nil, false, errorf(KindUnsupported, nil, "the manifest (%s) is not an image manifest", desc.MediaType)
	}
	layer, isChart, err := artifactLayer(&manifest)
	if err != nil {
		return nil, false, err
	}
	if layer.Size > limit {
		return nil, false, errorf(KindTooLarge, nil, "the layer %s is %d bytes, more than the limit of %d bytes (--max-artifact-bytes)", layer.Digest, layer.Size, limit)
	}
	data, err = readBlob(ctx, puller, ref.Context(), layer)
	return data, isChart, err
}

// artifactLayer tells a Helm chart (its chart layer) from a bundle of
// manifests (its one tar+gzip layer); any other artifact is
// KindUnsupported, with its media types in the message.
func artifactLayer(m *v1.Manifest) (v1.Descriptor, bool, error) {
	if string(m.Config.MediaType) == HelmConfigMediaType {
		for _, l := range m.Layers {
			if mt := string(l.MediaType); mt == HelmChartMediaType || mt == helmLegacyChartMediaType {
				return l, true, nil
			}
		}
		return v1.Descriptor{}, false, errorf(KindUnsupported, nil, "a Helm chart artifact without a layer of type %s", HelmChartMediaType)
	}
	if len(m.Layers) == 1 {
		for _, mt := range BundleMediaTypes {
			if string(m.Layers[0].MediaType) == mt {
				return m.Layers[0], false, nil
			}
		}
	}
	var types []string
	for _, l := range m.Layers {
		types = append(types, string(l.MediaType))
	}
	return v1.Descriptor{}, false, errorf(KindUnsupported, nil,
		"the artifact (config %s, layers [%s]) is neither a Helm chart (config %s) nor a bundle of manifests (one layer of %s)",
		m.Config.MediaType, strings.Join(types, ", "), HelmConfigMediaType, strings.Join(BundleMediaTypes, ", "))
}

// readBlob downloads the blob of layer and checks its size and digest: it
// reads at most layer.Size+1 bytes, however much the registry sends.
func readBlob(ctx context.Context, puller *remote.Puller, repo name.Repository, layer v1.Descriptor) ([]byte, error) {
	blob, err := puller.Layer(ctx, repo.Digest(layer.Digest.String()))
	if err != nil {
		return nil, &Error{Kind: KindRegistry, Message: "reading the layer", Err: err}
	}
	rc, err := blob.Compressed()
	if err != nil {
		return nil, &Error{Kind: KindRegistry, Message: "reading the layer", Err: err}
	}
	defer rc.Close()
	h := sha256.New()
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.TeeReader(io.LimitReader(rc, layer.Size+1), h))
	if err != nil && !errtext.DigestMismatch(err) {
		return nil, &Error{Kind: KindRegistry, Message: "reading the layer", Err: err}
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); n != layer.Size || got != layer.Digest.String() {
		return nil, errorf(KindDigestMismatch, nil, "the layer's bytes (%d, %s) are not those of its descriptor (%d, %s)", n, got, layer.Size, layer.Digest)
	}
	return buf.Bytes(), nil
}

// dockerConfigJSONKey is the key of a kubernetes.io/dockerconfigjson Secret.
const dockerConfigJSONKey = ".dockerconfigjson"

// DockerConfigEntry returns the raw entry of a .dockerconfigjson for the
// registry of repo: a key equal to its host (with or without a scheme and a
// /v1/ or /v2/ path), or a key with a path that the repository's starts
// with, the longest first; nil when none matches (anonymous).
func DockerConfigEntry(data []byte, repo name.Repository) (json.RawMessage, error) {
	var cfg struct {
		Auths map[string]json.RawMessage `json:"auths"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("key %s is not a docker config", dockerConfigJSONKey)
	}
	host := repo.RegistryStr()
	var best json.RawMessage
	bestLen := -1
	for k, v := range cfg.Auths {
		raw := k
		if !strings.Contains(raw, "://") {
			raw = "https://" + raw
		}
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		keyHost := strings.ToLower(u.Host)
		if keyHost == "docker.io" || keyHost == "registry-1.docker.io" {
			keyHost = name.DefaultRegistry
		}
		if keyHost != strings.ToLower(host) {
			continue
		}
		path := strings.Trim(u.Path, "/")
		if path == "v1" || path == "v2" {
			path = ""
		}
		if path != "" && !strings.HasPrefix(repo.RepositoryStr()+"/", path+"/") {
			continue
		}
		if len(path) > bestLen {
			best, bestLen = v, len(path)
		}
	}
	return best, nil
}
