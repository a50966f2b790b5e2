package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
)

// The values of make run's example of a second source: a team's values
// file for production, in the Git example's commit, under teamValuesDir
// (the values source's path) as teamValuesFile. Nothing else of that commit
// reads it, so the other Git examples render what they did.
const (
	teamValuesDir  = "envs"
	teamValuesFile = "prod/values.yaml"
	teamValues     = "# A team's values for production, read by the Release demo/web-team-values\n" +
		"# of make run (spec.valuesSource), over the chart's values.yaml.\n" +
		"replicas: 1\n" +
		"message: hello from envs/prod/values.yaml, a team's values in Git\n"
)

// teamValuesName is the Release of the example, and the name of the
// objects it renders (the chart names them by .Release.Name).
const teamValuesName = "web-team-values"

// withTeamValues is tree with the team's values file added; tree is left
// alone.
func withTeamValues(tree gitserver.Tree) gitserver.Tree {
	files := maps.Clone(tree.Files)
	if files == nil {
		files = map[string]string{}
	}
	files[path.Join(teamValuesDir, teamValuesFile)] = teamValues
	tree.Files = files
	return tree
}

// teamValuesRelease is the Release demo/web-team-values: the chart of web
// (the OCI registry's, verified as web verifies it, with web's
// ServiceAccount, sync policy and health rules) with its values from the
// Git repository url, branch main, path teamValuesDir: the file
// teamValuesFile, and no values of web's own.
func teamValuesRelease(web *convoyv1alpha1.Release, url string) *convoyv1alpha1.Release {
	release := web.DeepCopy()
	release.ObjectMeta = metav1.ObjectMeta{Namespace: "demo", Name: teamValuesName}
	release.Spec.ValuesSource = &convoyv1alpha1.ValuesSource{Git: &convoyv1alpha1.GitRepositorySource{
		URL: url, Ref: convoyv1alpha1.GitReference{Branch: "main"}, Path: teamValuesDir}}
	release.Spec.Content = &convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{
		{Source: convoyv1alpha1.ValuesFileSourceValues, Path: teamValuesFile}}}
	return release
}

// createTeamValuesRelease creates teamValuesRelease of web and url.
func createTeamValuesRelease(ctx context.Context, convoy convoyclient.Interface, web *convoyv1alpha1.Release, url string) error {
	release := teamValuesRelease(web, url)
	if _, err := convoy.ConvoyV1alpha1().Releases("demo").Create(ctx, release, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Release demo/%s: %w", teamValuesName, err)
	}
	fmt.Fprintf(os.Stderr, "local-up: created the Release demo/%s: the chart of demo/web, its values %s of %s\n", teamValuesName, path.Join(teamValuesDir, teamValuesFile), url)
	return nil
}
