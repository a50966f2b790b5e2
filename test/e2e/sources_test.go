//go:build unix

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/source"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// webChart is a chart of one ConfigMap web-settings that says its version
// and a value.
func webChart(t *testing.T, version string) ([]byte, []byte) {
	t.Helper()
	tgz := chartTGZ(t, "web", map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: web\nversion: " + version + "\n",
		"values.yaml":         "color: blue\n",
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-settings}\ndata: {version: {{ .Chart.Version | quote }}, color: {{ .Values.color | quote }}}\n",
		"templates/NOTES.txt": "hello",
	})
	meta, _ := json.Marshal(map[string]string{"apiVersion": "v2", "name": "web", "version": version})
	return tgz, meta
}

// startTestRegistry starts an OCI registry in this process, on 127.0.0.1.
func startTestRegistry(t *testing.T, opts ociregistry.Options) *ociregistry.Server {
	t.Helper()
	reg, err := ociregistry.Start(opts)
	require.NoError(t, err)
	t.Cleanup(reg.Close)
	return reg
}

// newSourceRelease creates a Release of source src, checked every
// passInterval, in manual mode.
func newSourceRelease(t *testing.T, namespace, name string, src convoyv1alpha1.ReleaseSource, opts ...releaseOption) {
	t.Helper()
	createRelease(t, namespace, name, append([]releaseOption{func(r *convoyv1alpha1.Release) { r.Spec.Source = src }}, opts...)...)
}

func ociSource(url, tag, digest string) convoyv1alpha1.ReleaseSource {
	return convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: url, Tag: tag, Digest: digest}}
}

// An OCI chart by tag goes round the loop; the tag pushed again with
// another chart makes the fresh render differ (manual mode: Drifted, the
// new digest named) until a sync; by digest too.
func TestSourcesOCIChart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	reg := startTestRegistry(t, ociregistry.Options{})
	tgz, meta := webChart(t, "1.0.0")
	first, err := reg.PushChart(ctx, "charts/web", "stable", tgz, meta)
	require.NoError(t, err)
	standIn := newStandIn(t)

	newSourceRelease(t, ns, "web", ociSource(reg.URL("charts/web"), "stable", ""))
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	d := getDiff(t, ns, "web", "")
	require.NotNil(t, d.ResolvedSource)
	assert.Equal(t, subresourcesv1alpha1.ResolvedSource{Kind: source.KindOCIRepository, URL: reg.URL("charts/web"), Tag: "stable", Digest: first}, *d.ResolvedSource)
	p := preview(t, ns, "web", "")
	require.NotNil(t, p.ResolvedSource)
	assert.Equal(t, first, p.ResolvedSource.Digest)
	assert.Contains(t, string(p.Objects[0].Raw), `"version":"1.0.0"`)
	get := kubectlConvoy(t, "", "release", "get", "web", "-n", ns)
	require.Zero(t, get.code, "%s", get)
	assert.Contains(t, get.stdout, "Resolved source:")
	assert.Contains(t, get.stdout, reg.URL("charts/web")+":stable ("+first+")")

	tgz2, meta2 := webChart(t, "1.1.0")
	second, err := reg.PushChart(ctx, "charts/web", "stable", tgz2, meta2)
	require.NoError(t, err)
	cond := waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
	assert.Contains(t, cond.Message, "ConfigMap "+ns+"/web-settings is Modified: data.version")
	assert.Equal(t, second, getDiff(t, ns, "web", "").ResolvedSource.Digest, "the new digest")
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	newSourceRelease(t, ns, "pinned", ociSource(reg.URL("charts/web"), "", first))
	standIn.apply(ns, "pinned")
	waitInSync(t, ns, "pinned", metav1.ConditionTrue, "InSync")
	assert.Equal(t, first, getDiff(t, ns, "pinned", "").ResolvedSource.Digest)
}

// helmRepository is a Helm repository in this process, on 127.0.0.1.
type helmRepository struct {
	*httptest.Server
	files map[string][]byte
	index string
	// username and password, when set, are required (basic
	// authentication).
	username, password string

	mu       sync.Mutex
	requests []string
}

func startHelmRepository(t *testing.T) *helmRepository {
	t.Helper()
	r := &helmRepository{files: map[string][]byte{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, fmt.Sprintf("%s %s auth=%v", req.Method, req.URL.Path, req.Header.Get("Authorization") != ""))
		r.mu.Unlock()
		if user, password, _ := req.BasicAuth(); r.username != "" && (user != r.username || password != r.password) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.mu.Lock()
		index := r.index
		data, ok := r.files[strings.TrimPrefix(req.URL.Path, "/")]
		r.mu.Unlock()
		if req.URL.Path == "/index.yaml" {
			_, _ = w.Write([]byte(index))
			return
		}
		if ok {
			_, _ = w.Write(data)
			return
		}
		http.NotFound(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

// put serves data at name, and index as the index when it is not empty,
// while the repository serves.
func (r *helmRepository) put(name string, data []byte, index string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name != "" {
		r.files[name] = data
	}
	if index != "" {
		r.index = index
	}
}

// taken returns the requests served so far, and forgets them.
func (r *helmRepository) taken() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.requests
	r.requests = nil
	return out
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// A bundle of manifests from OCI, and a Helm repository whose constraint
// picks the highest match; a private repository whose index entry is on
// another host gets the chart from there without the credentials; an index
// whose digest does not match the chart is refused.
func TestSourcesBundleAndHelmRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	reg := startTestRegistry(t, ociregistry.Options{})
	_, err := reg.PushBundle(ctx, "manifests/web", "v1", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-bundle}\ndata: {a: b}\n"})
	require.NoError(t, err)
	newSourceRelease(t, ns, "bundle", ociSource(reg.URL("manifests/web"), "v1", ""))
	standIn.apply(ns, "bundle")
	waitInSync(t, ns, "bundle", metav1.ConditionTrue, "InSync")

	repo := startHelmRepository(t)
	var entries []string
	for _, v := range []string{"1.2.0", "1.3.0", "2.0.0"} {
		tgz, _ := webChart(t, v)
		repo.files["web-"+v+".tgz"] = tgz
		entries = append(entries, fmt.Sprintf("  - {name: web, version: %q, urls: [web-%s.tgz], digest: %s}", v, v, digestOf(tgz)))
	}
	repo.index = "apiVersion: v1\nentries:\n  web:\n" + strings.Join(entries, "\n") + "\n"
	newSourceRelease(t, ns, "helm", convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{
		URL: repo.URL, Chart: "web", Version: ">=1.2.0 <2.0.0"}})
	standIn.apply(ns, "helm")
	waitInSync(t, ns, "helm", metav1.ConditionTrue, "InSync")
	d := getDiff(t, ns, "helm", "")
	require.NotNil(t, d.ResolvedSource)
	assert.Equal(t, "1.3.0", d.ResolvedSource.Version)

	// A private repository whose index puts the chart on another host:
	// the credentials go to the repository only.
	private, elsewhere := startHelmRepository(t), startHelmRepository(t)
	private.username, private.password = "bob", "pw"
	tgz, _ := webChart(t, "3.0.0")
	elsewhere.files["web-3.0.0.tgz"] = tgz
	private.index = fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - {name: web, version: 3.0.0, urls: [%s/web-3.0.0.tgz], digest: %s}\n", elsewhere.URL, digestOf(tgz))
	_, err = kubeClient(t).CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-creds"},
		Data: map[string][]byte{"username": []byte("bob"), "password": []byte("pw")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	newSourceRelease(t, ns, "elsewhere", convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{
		URL: private.URL, Chart: "web", SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "repo-creds"}}})
	standIn.apply(ns, "elsewhere")
	waitInSync(t, ns, "elsewhere", metav1.ConditionTrue, "InSync")
	assert.Contains(t, private.taken(), "GET /index.yaml auth=true")
	fromElsewhere := elsewhere.taken()
	require.NotEmpty(t, fromElsewhere)
	for _, r := range fromElsewhere {
		assert.True(t, strings.HasSuffix(r, "auth=false"), "no credentials to another host: %s", r)
	}

	repo.put("web-1.2.0.tgz", []byte("not the chart of the index"), "")
	newSourceRelease(t, ns, "tampered", convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{
		URL: repo.URL, Chart: "web", Version: "1.2.0"}})
	assertSourceUndetermined(t, ns, "tampered", sourcefailure.ReasonDigestMismatch, "not the digest of the index")
}

// A private registry: its Secret works; an identity that may not read the
// Secret is Forbidden, wrong credentials SourceUnauthorized; a Release of
// another namespace that names the digest a first one fetched, without
// credentials, is refused by the registry, not served from the cache.
func TestSourcesPrivateRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := startTestRegistry(t, ociregistry.Options{Username: "alice", Password: "s3cret"})
	tgz, meta := webChart(t, "1.0.0")
	digest, err := reg.PushChart(ctx, "private/web", "1.0.0", tgz, meta)
	require.NoError(t, err)
	pullSecret := func(ns, name, password string) {
		_, err := kubeClient(t).CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON("alice", password)},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	withSecret := func(name string) releaseOption {
		return func(r *convoyv1alpha1.Release) {
			r.Spec.Source.OCIRepository.SecretRef = &convoyv1alpha1.LocalObjectReference{Name: name}
		}
	}
	ns := newNamespace(t)
	pullSecret(ns, "pull", "s3cret")
	pullSecret(ns, "wrong", "guess")
	standIn := newStandIn(t)
	newSourceRelease(t, ns, "web", ociSource(reg.URL("private/web"), "1.0.0", ""), withSecret("pull"))
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	newSourceRelease(t, ns, "wrong", ociSource(reg.URL("private/web"), "1.0.0", ""), withSecret("wrong"))
	assertUndetermined(t, ns, "wrong", sourcefailure.ReasonSourceUnauthorized, "the registry refused the credentials")

	// An identity that may read everything but Secrets.
	bare := newBareNamespace(t)
	grantServiceAccounts(t, bare, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "patch"}})
	pullSecret(bare, "pull", "s3cret")
	newSourceRelease(t, bare, "web", ociSource(reg.URL("private/web"), "1.0.0", ""), withSecret("pull"))
	assertUndetermined(t, bare, "web", "Forbidden", "ServiceAccount "+bare+"/default may not read an input of the release",
		"secretRef Secret "+bare+"/pull may not be read")

	// Another tenant names the digest without credentials.
	other := newNamespace(t)
	newSourceRelease(t, other, "web", ociSource(reg.URL("private/web"), "", digest))
	assertUndetermined(t, other, "web", sourcefailure.ReasonSourceUnauthorized, "confirming access to the manifest")
}

// Bad sources end with their reason; the server keeps serving and the other
// Releases keep their results.
func TestSourcesBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	good := startTestRegistry(t, ociregistry.Options{})
	tgz, meta := webChart(t, "1.0.0")
	_, err := good.PushChart(ctx, "charts/web", "1", tgz, meta)
	require.NoError(t, err)
	newSourceRelease(t, ns, "good", ociSource(good.URL("charts/web"), "1", ""))
	standIn.apply(ns, "good")
	waitInSync(t, ns, "good", metav1.ConditionTrue, "InSync")

	// Another chart than good's: the artifacts are kept by digest, and a
	// chart already verified would be served from the cache.
	mismatchTGZ, mismatchMeta := webChart(t, "9.9.9")
	var mismatch, slowPath string
	hooked := startTestRegistry(t, ociregistry.Options{Hook: func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case mismatch != "" && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+mismatch):
			_, _ = w.Write(bytes.Repeat([]byte("z"), len(mismatchTGZ)))
			return true
		case slowPath != "" && strings.Contains(r.URL.Path, slowPath):
			select {
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
			}
			return true
		}
		return false
	}})
	_, err = hooked.PushChart(ctx, "charts/mismatch", "1", mismatchTGZ, mismatchMeta)
	require.NoError(t, err)
	mismatch = "sha256:" + digestOf(mismatchTGZ)
	slowPath = "/charts/slow/"
	big := chartTGZ(t, "big", map[string]string{"Chart.yaml": "apiVersion: v2\nname: big\nversion: 1.0.0\n", "blob.bin": strings.Repeat("x", 1<<20)})
	_, err = good.PushChart(ctx, "charts/big", "1", append(big, bytes.Repeat([]byte{0}, 2<<20)...), meta)
	require.NoError(t, err)
	_, err = good.PushImage(ctx, "images/app", "1")
	require.NoError(t, err)
	// 64 MiB of spaces in a template: a few hundred KiB packed.
	bomb := chartTGZ(t, "bomb", map[string]string{"Chart.yaml": "apiVersion: v2\nname: bomb\nversion: 1.0.0\n", "templates/x.yaml": strings.Repeat(" ", 64<<20)})
	_, err = good.PushChart(ctx, "charts/bomb", "1", bomb, meta)
	require.NoError(t, err)
	broken := chartTGZ(t, "broken", map[string]string{"Chart.yaml": "apiVersion: v2\nname: broken\nversion: 1.0.0\n", "templates/x.yaml": "{{ fail \"no such value\" }}"})
	brokenDigest, err := good.PushChart(ctx, "charts/broken", "1", broken, meta)
	require.NoError(t, err)
	down := startTestRegistry(t, ociregistry.Options{})
	downURL := down.URL("charts/web")
	down.Close()

	repo := startHelmRepository(t)
	repo.index = "apiVersion: v1\nentries:\n  web:\n" + strings.Repeat("  - {version: 0.0.1, urls: [x.tgz], digest: abc}\n", 4000)

	good.Requests()
	for _, tc := range []struct {
		name, reason string
		src          convoyv1alpha1.ReleaseSource
		message      string
	}{
		{"down", sourcefailure.ReasonSourceUnreachable, ociSource(downURL, "1", ""), "connection refused"},
		{"unknown-tag", sourcefailure.ReasonArtifactNotFound, ociSource(good.URL("charts/web"), "2", ""), "not found"},
		{"too-large", sourcefailure.ReasonArtifactTooLarge, ociSource(good.URL("charts/big"), "1", ""), "--max-artifact-bytes"},
		{"mismatch", sourcefailure.ReasonDigestMismatch, ociSource(hooked.URL("charts/mismatch"), "1", ""), "are not those of its descriptor"},
		{"slow", sourcefailure.ReasonFetchTimeout, ociSource(hooked.URL("charts/slow"), "1", ""), "--fetch-timeout"},
		{"not-a-chart", sourcefailure.ReasonArtifactUnsupported, ociSource(good.URL("images/app"), "1", ""), "neither a Helm chart"},
		{"bomb", sourcefailure.ReasonArtifactTooLarge, ociSource(good.URL("charts/bomb"), "1", ""), "the chart inflated"},
		{"template-fails", "RenderFailed", ociSource(good.URL("charts/broken"), "1", ""), good.URL("charts/broken") + ":1@" + brokenDigest + ": chart broken"},
		{"index-too-large", sourcefailure.ReasonIndexTooLarge, convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "web"}}, "--max-index-bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newSourceRelease(t, ns, tc.name, tc.src)
			assertSourceUndetermined(t, ns, tc.name, tc.reason, tc.message)
		})
	}
	for _, r := range good.Requests() {
		assert.False(t, r.Method == http.MethodGet && strings.Contains(r.Path, "/charts/big/blobs/"), "the layer past the limit was not downloaded: %v", r)
	}
	// The others keep their results; the server serves.
	waitInSync(t, ns, "good", metav1.ConditionTrue, "InSync")
	mustKubectl(t, "", "", "get", "--raw", subresourcesAPI)
}
