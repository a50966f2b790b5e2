package source

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/internal/tartest"
	"github.com/kumodo/convoy-apiserver/pkg/credentials"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

var chartTGZ = []byte("a packaged chart, as bytes: the source does not open it")

func TestOCIChartByTagAndDigest(t *testing.T) {
	reg := startRegistry(t, ociregistry.Options{})
	ctx := context.Background()
	digest, err := reg.PushChart(ctx, "charts/web", "1.0.0", chartTGZ, []byte(`{"name":"web","version":"1.0.0"}`))
	require.NoError(t, err)
	reg.Requests()
	f, clk := newFetcher(t)

	src, err := f.Fetch(ctx, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/web"), Tag: "1.0.0"}), inputsOf())
	require.NoError(t, err)
	assert.Equal(t, chartTGZ, src.Chart)
	assert.Empty(t, src.Files)
	require.NotNil(t, src.Resolved)
	assert.Equal(t, KindOCIRepository, src.Resolved.Kind)
	assert.Equal(t, "1.0.0", src.Resolved.Tag)
	assert.Equal(t, digest, src.Resolved.Digest)
	assert.Contains(t, src.Where, "@"+digest)
	first := reg.Requests()
	assert.Equal(t, 1, count(first, http.MethodHead, "/manifests/1.0.0"), "the tag resolved with a HEAD: %v", first)
	assert.Equal(t, 1, count(first, http.MethodGet, "/manifests/"+digest), "the manifest read by digest")
	assert.Equal(t, 1, count(first, http.MethodGet, "/blobs/"), "the chart layer only: %v", first)

	// Warm: the tag's digest and the chart are reused, nothing is sent.
	again, err := f.Fetch(ctx, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/web"), Tag: "1.0.0"}), inputsOf())
	require.NoError(t, err)
	assert.Equal(t, chartTGZ, again.Chart)
	assert.Empty(t, reg.Requests(), "within the resolution's max age")

	// Past it: one HEAD, no download.
	clk.SetTime(clk.Now().Add(2 * DefaultResolveMaxAge))
	_, err = f.Fetch(ctx, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/web"), Tag: "1.0.0"}), inputsOf())
	require.NoError(t, err)
	later := reg.Requests()
	assert.Equal(t, 1, count(later, http.MethodHead, "/manifests/"), "%v", later)
	assert.Zero(t, count(later, http.MethodGet, "/blobs/"), "%v", later)

	// By digest.
	byDigest, err := f.Fetch(ctx, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/web"), Digest: digest}), inputsOf())
	require.NoError(t, err)
	assert.Equal(t, chartTGZ, byDigest.Chart)
	assert.Equal(t, digest, byDigest.Resolved.Digest)

	// The tag moved to another chart: a new digest once the resolution is
	// old, and the new chart.
	other := []byte("another chart")
	moved, err := reg.PushChart(ctx, "charts/web", "1.0.0", other, []byte(`{"name":"web","version":"1.0.1"}`))
	require.NoError(t, err)
	clk.SetTime(clk.Now().Add(2 * DefaultResolveMaxAge))
	src, err = f.Fetch(ctx, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/web"), Tag: "1.0.0"}), inputsOf())
	require.NoError(t, err)
	assert.Equal(t, moved, src.Resolved.Digest)
	assert.Equal(t, other, src.Chart)
}

func TestOCIBundleOfManifests(t *testing.T) {
	reg := startRegistry(t, ociregistry.Options{TLS: true})
	ctx := context.Background()
	_, err := reg.PushBundle(ctx, "manifests/web", "v1", map[string]string{
		"b/deploy.yaml": "kind: Deployment", "a.yaml": "kind: ConfigMap", "README.md": "not a manifest", "c.json": "{}",
	})
	require.NoError(t, err)
	f, _ := newFetcher(t)
	inputs := inputsOf(secret("ca", corev1.SecretTypeOpaque, map[string][]byte{"ca.crt": reg.CA()}))
	src, err := f.Fetch(ctx, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("manifests/web"), Tag: "v1",
		CertSecretRef: &convoyv1alpha1.LocalObjectReference{Name: "ca"}}), inputs)
	require.NoError(t, err)
	require.Nil(t, src.Chart)
	var names []string
	for _, file := range src.Files {
		names = append(names, file.Name)
		assert.Contains(t, file.Where, " file "+file.Name)
	}
	assert.Equal(t, []string{"README.md", "a.yaml", "b/deploy.yaml", "c.json"}, names)
	assert.Empty(t, src.Path)

	// A path names a directory of the bundle; one that leaves it is refused.
	src, err = f.Fetch(ctx, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("manifests/web"), Tag: "v1", Path: "./b/",
		CertSecretRef: &convoyv1alpha1.LocalObjectReference{Name: "ca"}}), inputs)
	require.NoError(t, err)
	assert.Equal(t, "b", src.Path)
	fetchErr(t, f, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("manifests/web"), Tag: "v1", Path: "b/../..",
		CertSecretRef: &convoyv1alpha1.LocalObjectReference{Name: "ca"}}), inputs, sourcefailure.ReasonSourceInvalid)

	// A bundle's link under the path is refused; one elsewhere is listed.
	layer := tartest.TarGz(t, tartest.Entry{Name: "web/deploy.yaml", Data: "kind: Deployment"}, tartest.Entry{Name: "web/passwd.yaml", Symlink: "/etc/passwd"},
		tartest.Entry{Name: "api/deploy.yaml", Data: "kind: Deployment"})
	_, err = reg.PushBundleLayer(ctx, "manifests/linked", "v1", layer)
	require.NoError(t, err)
	ca := &convoyv1alpha1.LocalObjectReference{Name: "ca"}
	ferr := fetchErr(t, f, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("manifests/linked"), Tag: "v1", Path: "web", CertSecretRef: ca}), inputs, failure.ReasonLinkUnsupported)
	assert.Contains(t, ferr.Message, "web/passwd.yaml is a symbolic link, which a source does not follow")
	src, err = f.Fetch(ctx, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("manifests/linked"), Tag: "v1", Path: "api", CertSecretRef: ca}), inputs)
	require.NoError(t, err)
	assert.Equal(t, []string{"web/passwd.yaml"}, src.Links)

	// Without the CA, the registry's certificate is not trusted.
	ferr = fetchErr(t, f, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("manifests/web"), Tag: "v1"}), inputsOf(), sourcefailure.ReasonSourceUnreachable)
	assert.Contains(t, ferr.Message, "certificate")
}

func TestOCIRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("an artifact that is neither a chart nor a bundle", func(t *testing.T) {
		reg := startRegistry(t, ociregistry.Options{})
		_, err := reg.PushImage(ctx, "images/app", "1")
		require.NoError(t, err)
		f, _ := newFetcher(t)
		ferr := fetchErr(t, f, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("images/app"), Tag: "1"}), inputsOf(), sourcefailure.ReasonArtifactUnsupported)
		assert.Contains(t, ferr.Message, "application/vnd.example.unknown")
	})
	t.Run("a layer larger than the limit is not downloaded", func(t *testing.T) {
		reg := startRegistry(t, ociregistry.Options{})
		_, err := reg.PushChart(ctx, "charts/big", "1", bytes.Repeat([]byte("x"), 4096), []byte(`{}`))
		require.NoError(t, err)
		reg.Requests()
		f, _ := newFetcher(t, func(o *Options) { o.MaxArtifactBytes = 2048 })
		ferr := fetchErr(t, f, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/big"), Tag: "1"}), inputsOf(), sourcefailure.ReasonArtifactTooLarge)
		assert.Contains(t, ferr.Message, "4096 bytes, more than the limit of 2048 bytes (--max-artifact-bytes)")
		assert.Zero(t, count(reg.Requests(), http.MethodGet, "/blobs/"), "no blob request")
	})
	t.Run("a blob whose bytes do not match its digest", func(t *testing.T) {
		var layer string
		reg := startRegistry(t, ociregistry.Options{Hook: func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodGet && layer != "" && strings.HasSuffix(r.URL.Path, "/blobs/"+layer) {
				_, _ = w.Write(bytes.Repeat([]byte("y"), len(chartTGZ)))
				return true
			}
			return false
		}})
		_, err := reg.PushChart(ctx, "charts/web", "1", chartTGZ, []byte(`{}`))
		require.NoError(t, err)
		layer = sha256Hex(chartTGZ)
		f, _ := newFetcher(t)
		ferr := fetchErr(t, f, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/web"), Tag: "1"}), inputsOf(), sourcefailure.ReasonDigestMismatch)
		assert.Contains(t, ferr.Message, "are not those of its descriptor")
	})
	t.Run("unknown tag and repository", func(t *testing.T) {
		reg := startRegistry(t, ociregistry.Options{})
		f, _ := newFetcher(t)
		fetchErr(t, f, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/none"), Tag: "1"}), inputsOf(), sourcefailure.ReasonArtifactNotFound)
	})
	t.Run("a registry down", func(t *testing.T) {
		reg := startRegistry(t, ociregistry.Options{})
		url := reg.URL("charts/web")
		reg.Close()
		f, _ := newFetcher(t)
		ferr := fetchErr(t, f, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: url, Tag: "1"}), inputsOf(), sourcefailure.ReasonSourceUnreachable)
		assert.Contains(t, ferr.Message, "connection refused")
	})
	t.Run("a registry slower than the timeout", func(t *testing.T) {
		asked := make(chan struct{}, 1)
		reg := startRegistry(t, ociregistry.Options{Hook: func(_ http.ResponseWriter, r *http.Request) bool {
			select {
			case asked <- struct{}{}:
			default:
			}
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return false
		}})
		f, _ := newFetcher(t, func(o *Options) { o.Timeout = 300 * time.Millisecond })
		release := ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/web"), Tag: "1"})
		// A Resolve (the render cache's key) starts the HEAD that the
		// Fetch then shares: both time out as FetchTimeout.
		resolved := make(chan error, 1)
		go func() {
			_, err := f.Resolve(ctx, release, inputsOf())
			resolved <- err
		}()
		<-asked // the Resolve's request runs: the Fetch joins it
		ferr := fetchErr(t, f, release, inputsOf(), sourcefailure.ReasonFetchTimeout)
		assert.Contains(t, ferr.Message, "--fetch-timeout")
		assert.Equal(t, sourcefailure.ReasonFetchTimeout, failure.ReasonOf(<-resolved))
	})
	t.Run("a blob redirected to a link-local address, refused before any packet", func(t *testing.T) {
		reg := startRegistry(t, ociregistry.Options{Hook: func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				http.Redirect(w, r, "https://169.254.169.254/latest"+r.URL.Path, http.StatusTemporaryRedirect)
				return true
			}
			return false
		}})
		_, err := reg.PushChart(ctx, "charts/web", "1", chartTGZ, []byte(`{}`))
		require.NoError(t, err)
		f, _ := newFetcher(t)
		dialed := loopbackOnly(t, f)
		// go-containerregistry refuses a redirect to a link-local address
		// literal before a dial (a host name that resolves to one is the
		// dialer's hook's, as for Helm repositories).
		ferr := fetchErr(t, f, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/web"), Tag: "1"}), inputsOf(), egress.ReasonAddressNotAllowed)
		assert.Contains(t, ferr.Message, "reading the layer: the registry redirected to a private or link-local address, which is not allowed")
		assert.Contains(t, ferr.Error(), `"169.254.169.254"`)
		assert.NotContains(t, dialed.taken(), "169.254.169.254:443")
	})
	t.Run("loopback refused without the development flag, before any packet", func(t *testing.T) {
		reg := startRegistry(t, ociregistry.Options{})
		ferr := fetchErr(t, NewFetcher(Options{}), ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("charts/web"), Tag: "1"}), inputsOf(), "AddressNotAllowed")
		assert.Contains(t, ferr.Message, "is not allowed: it is a loopback address (convoy-apiserver --allow-loopback-sources allows it for local development)")
		assert.NotContains(t, ferr.Message, "--allow-loopback-clusters")
		assert.Empty(t, reg.Requests())
	})
}

// Credentials come from the Release's Secret, go to the registry only, and
// the cache never serves an artifact to credentials the registry has not
// let read it.
func TestOCICredentials(t *testing.T) {
	ctx := context.Background()
	var redirectedAuth []bool
	store := startBlobStore(t, &redirectedAuth)
	redirect := false
	reg := startRegistry(t, ociregistry.Options{Username: "alice", Password: "s3cret", Hook: func(w http.ResponseWriter, r *http.Request) bool {
		if redirect && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			http.Redirect(w, r, store+r.URL.Path, http.StatusTemporaryRedirect)
			return true
		}
		return false
	}})
	digest, err := reg.PushChart(ctx, "private/web", "1", chartTGZ, []byte(`{}`))
	require.NoError(t, err)
	redirect = true
	f, _ := newFetcher(t)
	withSecret := func(name string) convoyv1alpha1.OCIRepositorySource {
		return convoyv1alpha1.OCIRepositorySource{URL: reg.URL("private/web"), Tag: "1", SecretRef: &convoyv1alpha1.LocalObjectReference{Name: name}}
	}
	inputs := inputsOf(
		secret("good", corev1.SecretTypeDockerConfigJson, map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON("alice", "s3cret")}),
		secret("wrong", corev1.SecretTypeDockerConfigJson, map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON("alice", "guess")}),
		secret("opaque", corev1.SecretTypeOpaque, map[string][]byte{"x": []byte("y")}),
	)

	fetchErr(t, f, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("private/web"), Tag: "1"}), inputs, sourcefailure.ReasonSourceUnauthorized)
	fetchErr(t, f, ociRelease(withSecret("wrong")), inputs, sourcefailure.ReasonSourceUnauthorized)
	fetchErr(t, f, ociRelease(withSecret("missing")), inputs, credentials.ReasonCredentialsInvalid)
	ferr := fetchErr(t, f, ociRelease(withSecret("opaque")), inputs, credentials.ReasonCredentialsInvalid)
	assert.Contains(t, ferr.Message, "kubernetes.io/dockerconfigjson")

	src, err := f.Fetch(ctx, ociRelease(withSecret("good")), inputs)
	require.NoError(t, err)
	assert.Equal(t, chartTGZ, src.Chart)
	require.NotEmpty(t, redirectedAuth, "the blob came from the store")
	for _, auth := range redirectedAuth {
		assert.False(t, auth, "credentials never follow a redirect to another host")
	}

	// The artifact is cached now: another identity naming its digest,
	// without credentials, is refused by the registry, not served.
	reg.Requests()
	ferr = fetchErr(t, f, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL("private/web"), Digest: digest}), inputs, sourcefailure.ReasonSourceUnauthorized)
	assert.Contains(t, ferr.Message, "confirming access")
	requests := reg.Requests()
	assert.Equal(t, 1, count(requests, http.MethodHead, "/manifests/"+digest), "the registry was asked: %v", requests)
	assert.Zero(t, count(requests, http.MethodGet, "/blobs/"))
	// With the right credentials by digest: confirmed with a HEAD, served
	// from the cache.
	byDigest := withSecret("good")
	byDigest.Tag, byDigest.Digest = "", digest
	_, err = f.Fetch(ctx, ociRelease(byDigest), inputs)
	require.NoError(t, err)
}

// startBlobStore is object storage on another port, where the registry
// redirects blob downloads: it records whether each request carried
// credentials, and serves the chart layer.
func startBlobStore(t *testing.T, auth *[]bool) string {
	t.Helper()
	store := startRegistry(t, ociregistry.Options{Hook: func(w http.ResponseWriter, r *http.Request) bool {
		*auth = append(*auth, r.Header.Get("Authorization") != "")
		_, _ = w.Write(chartTGZ)
		return true
	}})
	return "http://" + store.Host()
}

// A bundle or a chart that inflates past the limit is refused after the
// limit, never inflated whole.
func TestOCIDecompressionBomb(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t, ociregistry.Options{})
	bombChart, err := ociregistry.TarGz(map[string]string{"bomb/Chart.yaml": "apiVersion: v2\nname: bomb\nversion: 1.0.0\n", "bomb/templates/x.yaml": strings.Repeat(" ", 8<<20)})
	require.NoError(t, err)
	_, err = reg.PushChart(ctx, "charts/bomb", "1", bombChart, []byte(`{}`))
	require.NoError(t, err)
	_, err = reg.PushBundle(ctx, "manifests/bomb", "1", map[string]string{"a.yaml": strings.Repeat("\n", 8<<20)})
	require.NoError(t, err)
	for _, tc := range []struct{ repo, message string }{
		{"manifests/bomb", "the bundle inflated is larger than the limit of 1048576 bytes (--max-artifact-bytes)"},
		{"charts/bomb", "the chart inflated is larger than the limit of 1048576 bytes (--max-artifact-bytes)"},
	} {
		t.Run(tc.repo, func(t *testing.T) {
			f, _ := newFetcher(t, func(o *Options) { o.MaxArtifactBytes = 1 << 20 })
			ferr := fetchErr(t, f, ociRelease(convoyv1alpha1.OCIRepositorySource{URL: reg.URL(tc.repo), Tag: "1"}), inputsOf(), sourcefailure.ReasonArtifactTooLarge)
			assert.Contains(t, ferr.Message, tc.message)
		})
	}
}
