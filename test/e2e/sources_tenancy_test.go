//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// A tenant who runs its own registry or Helm repository cannot get another
// tenant's private chart by claiming its digest: a HEAD of its own tag that
// answers the victim's digest, the digest named directly, a manifest of its
// own served under that digest, an index that lists the victim's chart
// sha256 at a URL of its own. Each ends Undetermined with its cause; the
// victim's objects appear nowhere in the attacker's namespace, and the
// victim's Releases are unaffected.
func TestSourcesNoArtifactCrossesTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	marker := "victim-only-" + rand.String(12)
	tgz := chartTGZ(t, "private", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: private\nversion: 1.0.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: victim-settings}\ndata: {token: " + marker + "}\n",
	})
	meta, _ := json.Marshal(map[string]string{"apiVersion": "v2", "name": "private", "version": "1.0.0"})

	// The victim: a private registry and a private Helm repository.
	victimReg := startTestRegistry(t, ociregistry.Options{Username: "alice", Password: "s3cret"})
	digest, err := victimReg.PushChart(ctx, "private/web", "1.0.0", tgz, meta)
	require.NoError(t, err)
	victimRepo := startHelmRepository(t)
	victimRepo.username, victimRepo.password = "bob", "pw"
	victimRepo.files["private-1.0.0.tgz"] = tgz
	victimRepo.index = fmt.Sprintf("apiVersion: v1\nentries:\n  private:\n  - {name: private, version: 1.0.0, urls: [private-1.0.0.tgz], digest: %s}\n", digestOf(tgz))

	victim := newNamespace(t)
	_, err = kubeClient(t).CoreV1().Secrets(victim).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pull"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: victimReg.DockerConfigJSON("alice", "s3cret")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kubeClient(t).CoreV1().Secrets(victim).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-creds"},
		Data: map[string][]byte{"username": []byte("bob"), "password": []byte("pw")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	standIn := newStandIn(t)
	newSourceRelease(t, victim, "oci", ociSource(victimReg.URL("private/web"), "1.0.0", ""), func(r *convoyv1alpha1.Release) {
		r.Spec.Source.OCIRepository.SecretRef = &convoyv1alpha1.LocalObjectReference{Name: "pull"}
	})
	newSourceRelease(t, victim, "helm", convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{
		URL: victimRepo.URL, Chart: "private", SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "repo-creds"}}})
	for _, name := range []string{"oci", "helm"} {
		standIn.apply(victim, name)
		waitInSync(t, victim, name, metav1.ConditionTrue, "InSync")
	}

	// The attacker: a registry whose HEAD of any tag "latest" claims the
	// victim's digest, and that serves a manifest of its own under that
	// digest in the repository evil/served; a Helm repository whose index
	// lists the victim's sha256 at a URL of its own, serving another file.
	attackerReg := startTestRegistry(t, ociregistry.Options{Hook: func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.Method == http.MethodHead && strings.HasSuffix(r.URL.Path, "/manifests/latest"):
			w.Header().Set("Docker-Content-Digest", digest)
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.Header().Set("Content-Length", "400")
			w.WriteHeader(http.StatusOK)
			return true
		case r.Method == http.MethodGet && r.URL.Path == "/v2/evil/served/manifests/"+digest:
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			_, _ = w.Write([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{},"layers":[]}`))
			return true
		}
		return false
	}})
	attackerRepo := startHelmRepository(t)
	attackerRepo.put("private-1.0.0.tgz", []byte("another file"), "")
	attackerRepo.index = fmt.Sprintf("apiVersion: v1\nentries:\n  private:\n  - {name: private, version: 1.0.0, urls: [private-1.0.0.tgz], digest: %s}\n", digestOf(tgz))

	attacker := newNamespace(t)
	for _, tc := range []struct {
		name, reason string
		src          convoyv1alpha1.ReleaseSource
		message      string
	}{
		{"by-tag", sourcefailure.ReasonArtifactNotFound, ociSource(attackerReg.URL("evil/web"), "latest", ""), "not found"},
		{"by-digest", sourcefailure.ReasonArtifactNotFound, ociSource(attackerReg.URL("evil/web"), "", digest), "not found"},
		{"own-manifest", sourcefailure.ReasonDigestMismatch, ociSource(attackerReg.URL("evil/served"), "", digest), ""},
		{"index", sourcefailure.ReasonDigestMismatch, convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{
			URL: attackerRepo.URL, Chart: "private"}}, "not the digest of the index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newSourceRelease(t, attacker, tc.name, tc.src)
			var inMessage []string
			if tc.message != "" {
				inMessage = append(inMessage, tc.message)
			}
			assertSourceUndetermined(t, attacker, tc.name, tc.reason, inMessage...)
			p := kubectl(t, "", "", "get", "--raw", previewPath(attacker, tc.name))
			require.Error(t, p.err, "/preview fails: %s", p.stdout)
			places := map[string]string{
				"/diff":       kubectl(t, "", "", "get", "--raw", diffPath(attacker, tc.name)).stdout,
				"/preview":    p.stdout + p.stderr,
				"the Release": mustKubectl(t, "", "", "get", "release", tc.name, "-n", attacker, "-o", "json"),
				"Events":      mustKubectl(t, "", "", "get", "events.events.k8s.io", "-n", attacker, "-o", "json"),
			}
			for where, text := range places {
				assert.NotContains(t, text, marker, "the victim's chart appears in %s", where)
				assert.NotContains(t, text, "victim-settings", "the victim's chart appears in %s", where)
			}
		})
	}
	_, err = kubeClient(t).CoreV1().ConfigMaps(attacker).Get(ctx, "victim-settings", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the victim's object is not on the cluster in the attacker's namespace: %v", err)

	// The victim is unaffected: its previews still hold its chart.
	for _, name := range []string{"oci", "helm"} {
		waitInSync(t, victim, name, metav1.ConditionTrue, "InSync")
		assert.Contains(t, string(preview(t, victim, name, "").Objects[0].Raw), marker)
	}
}

// One tenant's registry that never answers holds at most
// --max-concurrent-fetches-per-namespace of the slots of a replica; another
// namespace's Releases keep resolving and fetching there meanwhile. The
// replica does not lead (the loops are the first replica's), so its gauges
// count the requests of the /preview calls of this test alone.
func TestSourcesSlowTenantLeavesSlots(t *testing.T) {
	// Not parallel: it starts a second replica.
	ctx := context.Background()
	var inFlight atomic.Int32
	release := make(chan struct{})
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	reg := startTestRegistry(t, ociregistry.Options{Hook: func(_ http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/held-") {
			inFlight.Add(1)
			defer inFlight.Add(-1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		return false
	}})
	tgz, meta := webChart(t, "1.0.0")
	tags := []string{"held-1", "held-2", "held-3", "held-4", "held-5", "held-6", "free"}
	for _, tag := range tags {
		_, err := reg.PushChart(ctx, "charts/web", tag, tgz, meta)
		require.NoError(t, err)
	}
	replica, err := env.cp.StartConvoyAPIServer(ctx, "--fetch-timeout=2m", "--max-concurrent-fetches=4", "--max-concurrent-fetches-per-namespace=2")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, replica.Stop()) })

	slow, fast := newNamespace(t), newNamespace(t)
	for _, tag := range tags[:6] {
		newSourceRelease(t, slow, tag, ociSource(reg.URL("charts/web"), tag, ""))
	}
	newSourceRelease(t, fast, "web", ociSource(reg.URL("charts/web"), "free", ""))

	// Six previews of the slow namespace, each of a tag of its own (no
	// request shared), whose HEADs hang: each client gives up after its
	// timeout, the requests keep their slots (a request owns its slot).
	tlsConfig, err := rest.TLSConfigFor(env.cp.AdminConfig())
	require.NoError(t, err)
	tlsConfig.RootCAs, tlsConfig.InsecureSkipVerify = nil, true
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 5 * time.Second}
	for _, tag := range tags[:6] {
		go func() {
			if resp, err := client.Get(replica.URL() + previewPath(slow, tag)); err == nil {
				resp.Body.Close()
			}
		}()
	}
	eventually(t, "the slow namespace's requests hold its share and wait", func(context.Context) error {
		running, waiting := metric(t, replica, "convoy_source_fetches_running"), metric(t, replica, "convoy_source_fetches_waiting")
		if running != "2" || waiting != "4" {
			return fmt.Errorf("running %q, waiting %q", running, waiting)
		}
		return nil
	})

	code, body := replicaGet(t, replica, previewPath(fast, "web"))
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "web-settings")
	assert.Equal(t, "2", metric(t, replica, "convoy_source_fetches_running"), "the slow namespace's requests still hold their slots")
	assert.GreaterOrEqual(t, inFlight.Load(), int32(2), "and are still held by its registry")

	letGo()
	eventually(t, "every request ended", func(context.Context) error {
		if running := metric(t, replica, "convoy_source_fetches_running"); running != "0" {
			return fmt.Errorf("running %q", running)
		}
		return nil
	})
}
