package main

import (
	"path"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
)

// The Git example's commit gains the team's values file and nothing else;
// the caller's tree is left alone.
func TestWithTeamValues(t *testing.T) {
	tree := gitserver.Tree{Files: map[string]string{"overlays/prod/kustomization.yaml": "resources: []\n"}}
	got := withTeamValues(tree)
	assert.Equal(t, map[string]string{
		"overlays/prod/kustomization.yaml": "resources: []\n",
		"envs/prod/values.yaml":            teamValues,
	}, got.Files)
	assert.Len(t, tree.Files, 1, "the caller's tree is left alone")
}

// demo/web-team-values is demo/web's chart, verified as web verifies it,
// with its values from the Git example (branch main, path envs) and no
// inline values of web's, which would win over the file.
func TestTeamValuesRelease(t *testing.T) {
	web := &convoyv1alpha1.Release{
		Spec: convoyv1alpha1.ReleaseSpec{
			ServiceAccountName: "podinfo-deployer",
			Source: convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: "oci://127.0.0.1:5000/charts/web", Tag: "1.0.0",
				Verify: &convoyv1alpha1.OCIVerification{Provider: "cosign", SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "web-signing-keys"}}}},
			Content: &convoyv1alpha1.ReleaseContent{Values: &runtime.RawExtension{Raw: []byte(`{"message":"hello from demo/web"}`)}},
		},
	}
	web.Name, web.Namespace = "web", "demo"
	got := teamValuesRelease(web, "http://127.0.0.1:4000/podinfo.git")

	assert.Equal(t, "demo", got.Namespace)
	assert.Equal(t, "web-team-values", got.Name)
	assert.Equal(t, web.Spec.Source, got.Spec.Source, "web's chart, verified")
	assert.Equal(t, "podinfo-deployer", got.Spec.ServiceAccountName)
	assert.Equal(t, &convoyv1alpha1.ValuesSource{Git: &convoyv1alpha1.GitRepositorySource{
		URL: "http://127.0.0.1:4000/podinfo.git", Ref: convoyv1alpha1.GitReference{Branch: "main"}, Path: "envs"}}, got.Spec.ValuesSource)
	assert.Equal(t, &convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{
		{Source: convoyv1alpha1.ValuesFileSourceValues, Path: "prod/values.yaml"}}}, got.Spec.Content)
	assert.Equal(t, "web", web.Name, "web is left alone")
	assert.Nil(t, web.Spec.ValuesSource)
	assert.NotNil(t, web.Spec.Content.Values)
}

// The example chart rendered as demo/web-team-values with the team's
// values file (read where the values source's path and the entry's path
// put it): objects named after the Release, none of another example's of
// demo, with the file's replicas and message over the chart's values.yaml.
func TestTeamValuesRender(t *testing.T) {
	chrt, err := loader.LoadDir("../../artifacts/charts/web")
	require.NoError(t, err)
	tree := withTeamValues(gitserver.Tree{})
	data, ok := tree.Files[path.Join(teamValuesDir, teamValuesFile)]
	require.True(t, ok)
	var vals map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(data), &vals))
	top, err := commonutil.ToRenderValues(chrt, vals, common.ReleaseOptions{Name: teamValuesName, Namespace: "demo", IsInstall: true}, nil)
	require.NoError(t, err)
	files, err := engine.Render(chrt, top)
	require.NoError(t, err)

	others := []string{"podinfo", "web", "web-keyless", "web-git", "prod-podinfo", "signed-prod-podinfo"}
	var deployment struct {
		Metadata struct{ Name string }
		Spec     struct {
			Replicas int
			Template struct {
				Spec struct {
					Containers []struct {
						Env []struct{ Name, Value string }
					}
				}
			}
		}
	}
	for name, manifest := range files {
		var obj struct{ Metadata struct{ Name string } }
		require.NoError(t, yaml.Unmarshal([]byte(manifest), &obj), name)
		assert.Equal(t, teamValuesName, obj.Metadata.Name, name)
		assert.NotContains(t, others, obj.Metadata.Name, name)
		if path.Base(name) == "deployment.yaml" {
			require.NoError(t, yaml.Unmarshal([]byte(manifest), &deployment))
		}
	}
	assert.Equal(t, 1, deployment.Spec.Replicas, "the team's replicas over the chart's 2 (and not values-prod.yaml's 3)")
	require.Len(t, deployment.Spec.Template.Spec.Containers, 1)
	assert.Contains(t, deployment.Spec.Template.Spec.Containers[0].Env, struct{ Name, Value string }{"PODINFO_UI_MESSAGE", "hello from envs/prod/values.yaml, a team's values in Git"})
}
