package main

import (
	"context"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/source"
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

// demo/web-team-values renders with convoy's engine as make run's stand-in
// renders it: the chart pushed to a registry as make run pushes it, the
// values from a commit of the Git example's tree served by git
// http-backend; the render names both revisions, its objects are named
// after the Release (none of another example's of demo) and hold the
// file's replicas and message over the chart's values.yaml. The chart's
// signature is left out (the e2e suite covers verification).
func TestTeamValuesReleaseRenders(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx := context.Background()
	registry, err := ociregistry.Start(ociregistry.Options{})
	require.NoError(t, err)
	t.Cleanup(registry.Close)
	repo, tag, digest, err := pushChart(ctx, registry, "../../artifacts/charts/web")
	require.NoError(t, err)

	gitRepo, server, err := gitserver.StartRepo(gitserver.Options{Root: t.TempDir()}, "podinfo.git")
	require.NoError(t, err)
	t.Cleanup(server.Close)
	commit, err := gitRepo.Commit("main", withTeamValues(gitserver.Tree{Files: map[string]string{"README.md": "the Git example\n"}}), "the Git example")
	require.NoError(t, err)

	web := &convoyv1alpha1.Release{Spec: convoyv1alpha1.ReleaseSpec{ServiceAccountName: "podinfo-deployer",
		Source: convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: registry.URL(repo), Tag: tag}}}}
	release := teamValuesRelease(web, server.RepoURL("podinfo.git"))

	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Service"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	engine := render.NewEngine(source.NewFetcher(source.Options{Policy: egress.AddressPolicy{AllowLoopback: true}, CacheBytes: -1}), nil, render.Limits{})
	out, err := engine.Renderer(source.ClientInputs{Client: fake.NewClientset()}, render.MapperScoper{Mapper: mapper}).Render(ctx, release)
	require.NoError(t, err)

	require.NotNil(t, out.Resolved)
	assert.Equal(t, digest, out.Resolved.Digest, "the chart by the digest pushed")
	require.NotNil(t, out.ValuesResolved, "the values source's revision")
	assert.Equal(t, commit, out.ValuesResolved.Commit)
	assert.Equal(t, "refs/heads/main", out.ValuesResolved.Ref)
	others := []string{"podinfo", "web", "web-keyless", "web-git", "prod-podinfo", "signed-prod-podinfo"}
	var deployment *unstructured.Unstructured
	for _, obj := range out.Objects {
		assert.Equal(t, teamValuesName, obj.GetName(), obj.GetKind())
		assert.NotContains(t, others, obj.GetName())
		if obj.GetKind() == "Deployment" {
			deployment = obj
		}
	}
	assert.Len(t, out.Objects, 2)
	require.NotNil(t, deployment)
	replicas, _, err := unstructured.NestedInt64(deployment.Object, "spec", "replicas")
	require.NoError(t, err)
	assert.Equal(t, int64(1), replicas, "the team's replicas over the chart's 2 (and not values-prod.yaml's 3)")
	containers, _, err := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	require.Len(t, containers, 1)
	assert.Contains(t, containers[0].(map[string]any)["env"], map[string]any{"name": "PODINFO_UI_MESSAGE", "value": "hello from envs/prod/values.yaml, a team's values in Git"})
}
