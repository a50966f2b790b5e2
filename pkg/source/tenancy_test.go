package source

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// An artifact is served from the content cache only to a Release that
// names the origin it was downloaded from: a tenant's registry that claims
// another tenant's digest (a HEAD of its own tag, or the digest named
// directly) gets a download from itself, which fails; the victim is
// unaffected.
func TestContentCacheKeyedByOrigin(t *testing.T) {
	ctx := context.Background()
	victimChart := []byte("the victim's private chart")
	victim := startRegistry(t, ociregistry.Options{Username: "alice", Password: "s3cret"})
	digest, err := victim.PushChart(ctx, "private/web", "1.0.0", victimChart, []byte(`{"name":"web","version":"1.0.0"}`))
	require.NoError(t, err)

	// The attacker's registry answers a HEAD of any tag with the victim's
	// digest; with serveManifest it also answers a GET of that digest with
	// a manifest of its own.
	var serveManifest atomic.Bool
	attacker := startRegistry(t, ociregistry.Options{Hook: func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.Method == http.MethodHead && strings.HasSuffix(r.URL.Path, "/manifests/latest"):
			w.Header().Set("Docker-Content-Digest", digest)
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.Header().Set("Content-Length", strconv.Itoa(400))
			w.WriteHeader(http.StatusOK)
			return true
		case serveManifest.Load() && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/manifests/"+digest):
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			_, _ = w.Write([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{},"layers":[]}`))
			return true
		}
		return false
	}})
	_, err = attacker.PushChart(ctx, "evil/web", "other", []byte("the attacker's chart"), []byte(`{}`))
	require.NoError(t, err)

	f, _ := newFetcher(t)
	victimInputs := inputsOf(secret("pull", corev1.SecretTypeDockerConfigJson,
		map[string][]byte{corev1.DockerConfigJsonKey: victim.DockerConfigJSON("alice", "s3cret")}))
	victimRelease := ociRelease(convoyv1alpha1.OCIRepositorySource{URL: victim.URL("private/web"), Tag: "1.0.0",
		SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "pull"}})
	got, err := f.Fetch(ctx, victimRelease, victimInputs)
	require.NoError(t, err)
	require.Equal(t, victimChart, got.Chart, "the victim's chart is in the cache now")

	for _, tc := range []struct {
		name          string
		src           convoyv1alpha1.OCIRepositorySource
		serveManifest bool
		reason        string
	}{
		{"a tag whose HEAD claims the digest", convoyv1alpha1.OCIRepositorySource{URL: attacker.URL("evil/web"), Tag: "latest"}, false, sourcefailure.ReasonArtifactNotFound},
		{"the digest named directly", convoyv1alpha1.OCIRepositorySource{URL: attacker.URL("evil/web"), Digest: digest}, false, sourcefailure.ReasonArtifactNotFound},
		{"a manifest of its own under the digest", convoyv1alpha1.OCIRepositorySource{URL: attacker.URL("evil/web"), Digest: digest}, true, sourcefailure.ReasonDigestMismatch},
		{"by tag, a manifest of its own", convoyv1alpha1.OCIRepositorySource{URL: attacker.URL("evil/web"), Tag: "latest"}, true, sourcefailure.ReasonDigestMismatch},
		{"another repository of the victim's registry", convoyv1alpha1.OCIRepositorySource{URL: victim.URL("private/other"), Digest: digest}, false, sourcefailure.ReasonSourceUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serveManifest.Store(tc.serveManifest)
			ferr := fetchErr(t, f, ociRelease(tc.src), inputsOf(), tc.reason)
			assert.NotContains(t, ferr.Message, string(victimChart))
		})
	}
	serveManifest.Store(false)

	// The victim is unaffected.
	got, err = f.Fetch(ctx, victimRelease, victimInputs)
	require.NoError(t, err)
	assert.Equal(t, victimChart, got.Chart)
}

// A Helm index that lists the digest of another tenant's chart at a URL of
// its own gets the chart from that URL, which is checked against the digest
// and refused; the cached chart is served only for the URL it was
// downloaded from.
func TestHelmContentCacheKeyedByChartURL(t *testing.T) {
	ctx := context.Background()
	victimChart := []byte("the victim's private chart")
	digest := strings.TrimPrefix(sha256Hex(victimChart), "sha256:")
	victim := startRepository(t, "bob", "pw")
	victim.files["web-1.0.0.tgz"] = victimChart
	victim.index = fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - {version: 1.0.0, urls: [web-1.0.0.tgz], digest: %s}\n", digest)
	attacker := startRepository(t, "", "")
	attacker.files["web-1.0.0.tgz"] = []byte("another file")
	attacker.index = fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - {version: 1.0.0, urls: [web-1.0.0.tgz], digest: %s}\n"+
		"  direct:\n  - {version: 1.0.0, urls: [%s/web-1.0.0.tgz], digest: %s}\n", digest, victim.URL, digest)

	f, _ := newFetcher(t)
	inputs := inputsOf(caSecret("ca", victim.Server),
		secret("creds", corev1.SecretTypeOpaque, map[string][]byte{"username": []byte("bob"), "password": []byte("pw")}))
	ca := &convoyv1alpha1.LocalObjectReference{Name: "ca"}
	victimRelease := helmRelease(convoyv1alpha1.HelmRepositorySource{URL: victim.URL, Chart: "web", CertSecretRef: ca,
		SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "creds"}})
	got, err := f.Fetch(ctx, victimRelease, inputs)
	require.NoError(t, err)
	require.Equal(t, victimChart, got.Chart)
	victim.taken()

	// The attacker's URL: downloaded from there, another file.
	ferr := fetchErr(t, f, helmRelease(convoyv1alpha1.HelmRepositorySource{URL: attacker.URL, Chart: "web", CertSecretRef: ca}), inputs, sourcefailure.ReasonDigestMismatch)
	assert.NotContains(t, ferr.Message, string(victimChart))
	assert.Contains(t, attacker.taken(), "GET /web-1.0.0.tgz auth=false")
	// The victim's URL in the attacker's index: the cached chart only if
	// the victim's repository lets the attacker read it, which it does not
	// (no credentials go to another origin than the attacker's own).
	fetchErr(t, f, helmRelease(convoyv1alpha1.HelmRepositorySource{URL: attacker.URL, Chart: "direct", CertSecretRef: ca}), inputs, sourcefailure.ReasonSourceUnauthorized)
	assert.Equal(t, []string{"HEAD /web-1.0.0.tgz auth=false"}, victim.taken())

	got, err = f.Fetch(ctx, victimRelease, inputs)
	require.NoError(t, err)
	assert.Equal(t, victimChart, got.Chart)
}
