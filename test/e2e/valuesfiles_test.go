package e2e

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

// envChart is a chart with one values file per environment: a ConfigMap
// NAME-env that shows the color, the replicas and the environment.
func envChart(prodColor string) map[string]string {
	return map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: envs\nversion: 1.0.0\n",
		"values.yaml":         "color: grey\nreplicas: 1\nenv: default\n",
		"values-prod.yaml":    "color: " + prodColor + "\nenv: prod\n",
		"values-staging.yaml": "color: yellow\nenv: staging\n",
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-env}\ndata: {color: {{ .Values.color | quote }}, replicas: {{ .Values.replicas | quote }}, env: {{ .Values.env | quote }}}\n",
	}
}

func withValuesFiles(files ...convoyv1alpha1.ValuesFile) releaseOption {
	return func(r *convoyv1alpha1.Release) {
		if r.Spec.Content == nil {
			r.Spec.Content = &convoyv1alpha1.ReleaseContent{}
		}
		r.Spec.Content.ValuesFiles = files
	}
}

// envData is the data of the ConfigMap NAME-env the stand-in applied.
func envData(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	cm, err := kubeClient(t).CoreV1().ConfigMaps(ns).Get(context.Background(), name+"-env", metav1.GetOptions{})
	require.NoError(t, err)
	return cm.Data
}

// A chart's directory in Git with values-prod.yaml, and a packaged chart's
// own values file in an OCI registry: each renders with its file over the
// chart's defaults, under valuesFrom and values. A commit that changes the
// values file alone makes the Release Drifted, /diff shows the field, and a
// sync makes it InSync again. A missing file says which.
func TestValuesFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	g := startGitRepo(t, gitserver.Options{})
	files := map[string]string{"README.md": "apps"}
	for k, v := range envChart("red") {
		files["charts/envs/"+k] = v
	}
	first := g.commit(t, "main", gitserver.Tree{Files: files})
	src := gitSource(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "charts/envs")

	newSourceRelease(t, ns, "git", src, withValuesFiles(convoyv1alpha1.ValuesFile{Path: "values-prod.yaml"}),
		func(r *convoyv1alpha1.Release) {
			r.Spec.Content.Values = &runtime.RawExtension{Raw: []byte(`{"replicas": 3}`)}
		})
	standIn.apply(ns, "git")
	waitInSync(t, ns, "git", metav1.ConditionTrue, "InSync")
	assert.Equal(t, map[string]string{"color": "red", "replicas": "3", "env": "prod"}, envData(t, ns, "git"))
	assert.Equal(t, first, getDiff(t, ns, "git", "").ResolvedSource.Commit)

	// The values file alone changes, in a new commit.
	files["charts/envs/values-prod.yaml"] = "color: green\nenv: prod\n"
	moved := g.commit(t, "main", gitserver.Tree{Files: files})
	cond := waitInSync(t, ns, "git", metav1.ConditionFalse, "Drifted")
	assert.Contains(t, cond.Message, "ConfigMap "+ns+"/git-env is Modified: data.color")
	d := getDiff(t, ns, "git", "")
	assert.Equal(t, moved, d.ResolvedSource.Commit)
	require.Len(t, d.Objects, 1)
	require.Len(t, d.Objects[0].Changes, 1, "%+v", d.Objects[0].Changes)
	change := d.Objects[0].Changes[0]
	assert.Equal(t, "data.color", change.Path)
	assert.Equal(t, subresourcesv1alpha1.ChangeReplace, change.Op)
	assert.JSONEq(t, `"green"`, string(change.Desired.Raw))
	assert.JSONEq(t, `"red"`, string(change.Live.Raw))
	standIn.apply(ns, "git")
	waitInSync(t, ns, "git", metav1.ConditionTrue, "InSync")
	assert.Equal(t, "green", envData(t, ns, "git")["color"])

	// A packaged chart's own values file, from an OCI registry.
	reg := startTestRegistry(t, ociregistry.Options{})
	meta, _ := json.Marshal(map[string]string{"apiVersion": "v2", "name": "envs", "version": "1.0.0"})
	_, err := reg.PushChart(ctx, "charts/envs", "1.0.0", chartTGZ(t, "envs", envChart("blue")), meta)
	require.NoError(t, err)
	newSourceRelease(t, ns, "oci", ociSource(reg.URL("charts/envs"), "1.0.0", ""),
		withValuesFiles(convoyv1alpha1.ValuesFile{Path: "values-staging.yaml"}, convoyv1alpha1.ValuesFile{Path: "values-prod.yaml"},
			convoyv1alpha1.ValuesFile{Path: "values-local.yaml", Optional: true}))
	standIn.apply(ns, "oci")
	waitInSync(t, ns, "oci", metav1.ConditionTrue, "InSync")
	assert.Equal(t, map[string]string{"color": "blue", "replicas": "1", "env": "prod"}, envData(t, ns, "oci"))

	// A values file the source does not hold, not optional.
	newSourceRelease(t, ns, "missing", src, withValuesFiles(convoyv1alpha1.ValuesFile{Path: "values-qa.yaml"}))
	assertSourceUndetermined(t, ns, "missing", render.ReasonValuesNotFound, "valuesFiles 0:", "holds no file values-qa.yaml")
}
