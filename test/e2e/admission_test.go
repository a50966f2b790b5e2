package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// applyPolicy applies a file of artifacts/admission (with its text
// changed by edit, when set) until the test ends, and waits until its
// binding refuses refused (a kubectl run that must fail, naming says).
func applyPolicy(t *testing.T, file string, edit func(string) string, refused func() kubectlResult, says string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(env.root, "artifacts/admission", file))
	require.NoError(t, err)
	text := string(raw)
	if edit != nil {
		text = edit(text)
	}
	mustKubectl(t, "", text, "apply", "--server-side", "-f", "-")
	t.Cleanup(func() { kubectl(t, "", text, "delete", "-f", "-") })
	eventually(t, "the policy "+file+" refuses", func(context.Context) error {
		r := refused()
		if r.err == nil {
			return fmt.Errorf("accepted (the binding may not be active yet)")
		}
		if !strings.Contains(r.stderr, says) {
			return fmt.Errorf("refused for another reason: %s", r.stderr)
		}
		return nil
	})
}

// The policy artifacts/admission/require-signed-sources.yaml admits, in a
// namespace labelled convoy.kumodo.io/require-signatures=true, a Release
// only with a source that asks for verification: an OCI, Git or Helm
// repository source with verify. The same sources without verify and
// ConfigMap sources (no signature) are refused, at create and at every
// update of spec (a verified Release changed to another source kind, or
// its verify taken away); an update of metadata alone is let through.
// Other namespaces are left alone.
func TestRequireSignedSourcesPolicy(t *testing.T) {
	// Not parallel: it applies a cluster-scoped ValidatingAdmissionPolicy and
	// its binding.
	required, free := newNamespace(t), newNamespace(t)
	mustKubectl(t, "", "", "label", "namespace", required, "convoy.kumodo.io/require-signatures=true")
	release := func(ns, name, source string) string {
		return fmt.Sprintf("apiVersion: convoy.kumodo.io/v1alpha1\nkind: Release\nmetadata: {name: %s, namespace: %s}\nspec:\n  source: %s\n", name, ns, source)
	}
	// Addresses on loopback: the observer reads the one Release created
	// for real, and nothing may leave the machine.
	unsigned := `{ociRepository: {url: "oci://127.0.0.1:1/apps/web", tag: v1}}`
	verified := `{ociRepository: {url: "oci://127.0.0.1:1/apps/web", tag: v1, verify: {provider: cosign, secretRef: {name: ci-keys}}}}`
	sources := map[string]struct{ source, says string }{
		"oci":       {unsigned, "spec.source.ociRepository.verify must be set"},
		"git":       {`{git: {url: "https://127.0.0.1:1/apps.git", ref: {branch: main}}}`, "spec.source.git.verify must be set"},
		"helm":      {`{helmRepository: {url: "https://127.0.0.1:1/charts", chart: web}}`, "spec.source.helmRepository.verify must be set"},
		"configmap": {`{configMap: {name: m}}`, "a configMap source carries no signature"},
	}
	applyPolicy(t, "require-signed-sources.yaml", nil, func() kubectlResult {
		return kubectl(t, "", release(required, "unsigned", unsigned), "create", "--dry-run=server", "-f", "-")
	}, sources["oci"].says)

	for kind, tc := range sources {
		t.Run("create "+kind, func(t *testing.T) {
			r := kubectl(t, "", release(required, kind, tc.source), "create", "--dry-run=server", "-f", "-")
			require.Error(t, r.err, "%s admitted where signatures are required", kind)
			assert.Contains(t, r.stderr, tc.says)
			assert.Contains(t, r.stderr, "this namespace requires signed sources")
			free := kubectl(t, "", release(free, kind, tc.source), "create", "--dry-run=server", "-f", "-")
			assert.NoError(t, free.err, "another namespace: %s", free.stderr)
		})
	}
	for name, source := range map[string]string{
		"verified":     verified,
		"git-head":     `{git: {url: "https://127.0.0.1:1/apps.git", ref: {branch: main}, verify: {secretRef: {name: git-signers}}}}`,
		"git-tag-head": `{git: {url: "https://127.0.0.1:1/apps.git", ref: {tag: v1.4.0}, verify: {mode: TagAndHEAD, secretRef: {name: git-signers}}}}`,
		"helm-prov":    `{helmRepository: {url: "https://127.0.0.1:1/charts", chart: web, verify: {provider: helm, secretRef: {name: chart-signers}}}}`,
	} {
		r := kubectl(t, "", release(required, name, source), "create", "--dry-run=server", "-f", "-")
		require.NoError(t, r.err, "a source that asks for verification is admitted (%s): %s", name, r.stderr)
	}

	// The values source is held to the same rule: its files change the
	// render as much as the chart's.
	withValues := func(values string) string {
		return release(required, "with-values", verified) + "  valuesSource: " + values + "\n"
	}
	for values, says := range map[string]string{
		`{git: {url: "https://127.0.0.1:1/values.git", ref: {branch: main}}}`: "spec.valuesSource.git.verify must be set",
		`{ociRepository: {url: "oci://127.0.0.1:1/apps/values", tag: v1}}`:    "spec.valuesSource.ociRepository.verify must be set",
		`{configMap: {name: team-values}}`:                                    "a configMap values source carries no signature",
	} {
		r := kubectl(t, "", withValues(values), "create", "--dry-run=server", "-f", "-")
		require.Error(t, r.err, "an unverified values source admitted: %s", values)
		assert.Contains(t, r.stderr, says)
	}
	r := kubectl(t, "", withValues(`{git: {url: "https://127.0.0.1:1/values.git", ref: {branch: main}, verify: {secretRef: {name: git-signers}}}}`), "create", "--dry-run=server", "-f", "-")
	require.NoError(t, r.err, "a verified values source is admitted: %s", r.stderr)

	// Updates: a verified Release may not become anything else.
	mustKubectl(t, "", release(required, "web", verified), "create", "-f", "-")
	for kind, tc := range sources {
		t.Run("update to "+kind, func(t *testing.T) {
			r := kubectl(t, "", release(required, "web", tc.source), "replace", "-f", "-")
			require.Error(t, r.err, "a verified Release changed to %s", kind)
			assert.Contains(t, r.stderr, tc.says)
		})
	}
	r = kubectl(t, "", "", "annotate", "release.convoy.kumodo.io/web", "-n", required, convoyv1alpha1.AnnotationSyncRequestedAt+"=2026-12-06T10:00:00Z")
	assert.NoError(t, r.err, "metadata alone is let through: %s", r.stderr)
	got, err := convoyClient(t).ConvoyV1alpha1().Releases(required).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, got.Spec.Source.OCIRepository)
	assert.NotNil(t, got.Spec.Source.OCIRepository.Verify, "still verified")
}

// renderSecret is a render Secret of release as anyone could write it:
// the gzip'd JSON of objs, named by their renderRef, with the annotation
// of the source revision when resolved is set.
func renderSecret(t *testing.T, ns, release string, resolved string, objs ...string) (*corev1.Secret, string) {
	t.Helper()
	var items []*unstructured.Unstructured
	for _, o := range objs {
		var u unstructured.Unstructured
		require.NoError(t, yaml.Unmarshal([]byte(o), &u.Object))
		items = append(items, &u)
	}
	r, err := render.New(items)
	require.NoError(t, err)
	raw, err := json.Marshal(r.Objects)
	require.NoError(t, err)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err = zw.Write(raw)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	secret := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: render.SecretName(release, r.Ref), Namespace: ns,
			Labels: map[string]string{convoyv1alpha1.LabelRelease: release, convoyv1alpha1.LabelRenderRef: r.Ref}},
		Type: render.SecretType,
		Data: map[string][]byte{render.SecretKey: gz.Bytes()},
	}
	if resolved != "" {
		secret.Annotations = map[string]string{convoyv1alpha1.AnnotationResolvedSource: resolved}
	}
	return secret, r.Ref
}

// The policy artifacts/admission/protect-render-store.yaml lets only the
// identities it names (here the admin, as whom the stand-in stores
// renders) write render Secrets: a tenant who may write Secrets
// may not create one, nor change the annotation, labels or data of one the
// controller stored; it may still write other Secrets, delete render
// Secrets, and update what the garbage collector updates.
func TestProtectRenderStorePolicy(t *testing.T) {
	// Not parallel: it applies a cluster-scoped ValidatingAdmissionPolicy and
	// its binding.
	ctx := context.Background()
	ns := newNamespace(t)
	tenant := "tenant-" + ns
	grant(t, ns, tenant, rbacPolicy("", "secrets", "get", "list", "create", "update", "patch", "delete"))
	asTenant := user(t, tenant)
	planted, _ := renderSecret(t, ns, "web", "", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: planted, namespace: "+ns+"}\n")
	plantedYAML, err := yaml.Marshal(planted)
	require.NoError(t, err)
	applyPolicy(t, "protect-render-store.yaml", func(s string) string {
		return strings.Replace(s, "system:serviceaccount:convoy-system:convoy-controller", "admin", 1)
	}, func() kubectlResult {
		return kubectl(t, asTenant, string(plantedYAML), "create", "-f", "-")
	}, "only convoy's controller may write render Secrets")

	// The controller (the stand-in, as admin) stores renders.
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	standIn := newStandIn(t)
	standIn.apply(ns, "web")
	stored := standIn.release(ns, "web").Status.LastApplied.RenderRef
	name := render.SecretName("web", stored)

	r := kubectl(t, asTenant, "", "annotate", "secret", name, "-n", ns, convoyv1alpha1.AnnotationResolvedSource+`={"kind":"OCIRepository","url":"oci://x"}`)
	require.Error(t, r.err, "a tenant names a revision on the controller's render")
	assert.Contains(t, r.stderr, "only convoy's controller may write render Secrets")
	assert.Contains(t, r.stderr, "not "+tenant)
	r = kubectl(t, asTenant, "", "label", "secret", name, "-n", ns, "--overwrite", convoyv1alpha1.LabelRenderRef+"=0000000000000000")
	require.Error(t, r.err, "a tenant relabels the controller's render")

	// What the garbage collector and finalizers do goes through.
	_, err = kubeClient(t).CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	mustKubectl(t, asTenant, "", "patch", "secret", name, "-n", ns, "--type=merge", "-p", `{"metadata":{"finalizers":["e2e.convoy.kumodo.io/hold"]}}`)
	mustKubectl(t, asTenant, "", "patch", "secret", name, "-n", ns, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	// Other Secrets, and deleting a render, are the tenant's.
	mustKubectl(t, asTenant, "", "create", "secret", "generic", "plain", "-n", ns, "--from-literal=a=b")
	mustKubectl(t, asTenant, "", "delete", "secret", name, "-n", ns)
}
