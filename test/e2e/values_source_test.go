package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// teamValues is a team's repository of values files, one per environment.
func teamValues(prodColor string) gitserver.Tree {
	return gitserver.Tree{Files: map[string]string{
		"README.md":                 "values of the web chart",
		"envs/prod/values.yaml":     "color: " + prodColor + "\n",
		"envs/staging/values.yaml":  "color: yellow\n",
		"other/secret-ish.yaml":     "color: black\n",
		"envs/prod/extra/more.yaml": "replicas: 2\n",
		"envs/big.yaml":             "# " + strings.Repeat("x", 70<<10) + "\ncolor: red\n",
	}}
}

// withGitValues makes the Git repository url (branch main, path envs, with
// the Secret secret when not empty) the Release's values source, and reads
// files of it, in order, after the chart's own values.yaml.
func withGitValues(url, secret string, files ...string) releaseOption {
	return func(r *convoyv1alpha1.Release) {
		g := &convoyv1alpha1.GitRepositorySource{URL: url, Ref: convoyv1alpha1.GitReference{Branch: "main"}, Path: "envs"}
		if secret != "" {
			g.SecretRef = &convoyv1alpha1.LocalObjectReference{Name: secret}
		}
		r.Spec.ValuesSource = &convoyv1alpha1.ValuesSource{Git: g}
		if r.Spec.Content == nil {
			r.Spec.Content = &convoyv1alpha1.ReleaseContent{}
		}
		for _, f := range files {
			r.Spec.Content.ValuesFiles = append(r.Spec.Content.ValuesFiles, convoyv1alpha1.ValuesFile{Source: convoyv1alpha1.ValuesFileSourceValues, Path: f})
		}
	}
}

// webSettings is the data of the ConfigMap web-settings of the web chart
// the stand-in applied in ns.
func webSettings(t *testing.T, ns string) map[string]string {
	t.Helper()
	cm, err := kubeClient(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "web-settings", metav1.GetOptions{})
	require.NoError(t, err)
	return cm.Data
}

// A chart from an OCI registry and one from a Helm repository, each with
// its values from a team's Git repository: rendered with them, InSync once
// applied; the values branch moves alone: Drifted, naming the new values
// commit, then InSync after a sync; a refresh resolves the values source
// again at once.
func TestValuesFromASecondSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	standIn := newStandIn(t)
	values := startGitRepo(t, gitserver.Options{})
	first := values.commit(t, "main", teamValues("green"))

	reg := startTestRegistry(t, ociregistry.Options{})
	tgz, meta := webChart(t, "1.0.0")
	_, err := reg.PushChart(ctx, "charts/web", "stable", tgz, meta)
	require.NoError(t, err)
	ociNS := newNamespace(t)
	newSourceRelease(t, ociNS, "web", ociSource(reg.URL("charts/web"), "stable", ""), withGitValues(values.url, "", "prod/values.yaml"))
	standIn.apply(ociNS, "web")
	waitInSync(t, ociNS, "web", metav1.ConditionTrue, "InSync")
	assert.Equal(t, "green", webSettings(t, ociNS)["color"], "the team's prod values over the chart's values.yaml")

	repo := startHelmRepository(t)
	repo.put("web-1.0.0.tgz", tgz, helmIndex(map[string][]byte{"1.0.0": tgz}))
	helmNS := newNamespace(t)
	newSourceRelease(t, helmNS, "web", convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "web"}},
		withGitValues(values.url, "", "staging/values.yaml", "prod/values.yaml"))
	standIn.apply(helmNS, "web")
	waitInSync(t, helmNS, "web", metav1.ConditionTrue, "InSync")
	assert.Equal(t, "green", webSettings(t, helmNS)["color"], "the later file wins")

	// The values branch moves; the chart does not.
	moved := values.commit(t, "main", teamValues("blue"))
	require.NotEqual(t, first, moved)
	for _, ns := range []string{ociNS, helmNS} {
		cond := waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
		assert.Contains(t, cond.Message, "ConfigMap "+ns+"/web-settings is Modified: data.color")
		d := getDiff(t, ns, "web", "")
		require.NotNil(t, d.ResolvedValuesSource, "the values source's revision in /diff")
		assert.Equal(t, moved, d.ResolvedValuesSource.Commit, "the new values commit")
		assert.Equal(t, "refs/heads/main", d.ResolvedValuesSource.Ref)
		require.NotNil(t, d.ResolvedSource)
		assert.Empty(t, d.ResolvedSource.Commit, "the chart's own revision is its digest")
		standIn.apply(ns, "web")
		waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
		assert.Equal(t, "blue", webSettings(t, ns)["color"])
		eventually(t, "status.lastResolvedValuesSource names the values commit", func(ctx context.Context) error {
			r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if lr := r.Status.LastResolvedValuesSource; lr == nil || lr.Commit != moved {
				return fmt.Errorf("lastResolvedValuesSource %+v", lr)
			}
			return nil
		})
	}

	// A Release checked every 10 minutes: a refresh resolves its values
	// source again now.
	refreshNS := newNamespace(t)
	newSourceRelease(t, refreshNS, "web", ociSource(reg.URL("charts/web"), "stable", ""), withGitValues(values.url, "", "prod/values.yaml"), every(10*time.Minute))
	standIn.apply(refreshNS, "web")
	waitInSync(t, refreshNS, "web", metav1.ConditionTrue, "InSync")
	again := values.commit(t, "main", teamValues("red"))
	r := waitRefreshed(t, refreshNS, "web", refresh(t, "", refreshNS, "web"))
	require.NotNil(t, r.Status.LastResolvedValuesSource)
	assert.Equal(t, again, r.Status.LastResolvedValuesSource.Commit, "the refresh resolved the values source")
	waitInSync(t, refreshNS, "web", metav1.ConditionFalse, "Drifted")
}

// A private values repository: with its Secret, read as the Release; without
// it, the server's refusal, in a message that names the values source, and
// nothing of the chart shown. Twenty Releases of one values repository and
// credentials share one ref listing per window.
func TestValuesSourceAccess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	values := startGitRepo(t, gitserver.Options{Username: "team", Password: "pw"})
	values.commit(t, "main", teamValues("green"))
	_, err := kubeClient(t).CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "values-creds"},
		Data: map[string][]byte{"username": []byte("team"), "password": []byte("pw")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	reg := startTestRegistry(t, ociregistry.Options{})
	tgz, meta := webChart(t, "1.0.0")
	_, err = reg.PushChart(ctx, "charts/web", "stable", tgz, meta)
	require.NoError(t, err)
	chart := ociSource(reg.URL("charts/web"), "stable", "")

	newSourceRelease(t, ns, "web", chart, withGitValues(values.url, "values-creds", "prod/values.yaml"))
	standIn.apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	newSourceRelease(t, ns, "anonymous", chart, withGitValues(values.url, "", "prod/values.yaml"))
	assertSourceUndetermined(t, ns, "anonymous", sourcefailure.ReasonSourceUnauthorized, "spec.valuesSource: ")
	assert.Empty(t, getDiff(t, ns, "anonymous", "").Objects, "nothing of the chart without its values")

	// A values file past --max-values-file-bytes (64 KiB here).
	newSourceRelease(t, ns, "big", chart, withGitValues(values.url, "values-creds", "big.yaml"))
	assertSourceUndetermined(t, ns, "big", render.ReasonValuesFileTooLarge, "big.yaml")

	fleet := newNamespace(t)
	_, err = kubeClient(t).CoreV1().Secrets(fleet).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "values-creds"},
		Data: map[string][]byte{"username": []byte("team"), "password": []byte("pw")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// A repository of its own: the Releases above keep listing theirs.
	shared := startGitRepo(t, gitserver.Options{Username: "team", Password: "pw"})
	shared.commit(t, "main", teamValues("green"))
	start := time.Now()
	for i := range 20 {
		newSourceRelease(t, fleet, fmt.Sprintf("web-%02d", i), chart, withGitValues(shared.url, "values-creds", "prod/values.yaml"))
	}
	for i := range 20 {
		waitInSync(t, fleet, fmt.Sprintf("web-%02d", i), metav1.ConditionFalse, "Drifted")
	}
	// One listing per --source-resolve-max-age window (2s here), whatever
	// the number of Releases: a window starts when a listing ends, not on
	// a 2s grid, so the first and the one under way count as well.
	windows := int(time.Since(start)/(2*time.Second)) + 2
	t.Logf("%d ref listings for 20 Releases in %s", shared.server.Listings(), time.Since(start).Round(time.Millisecond))
	assert.LessOrEqual(t, shared.server.Listings(), windows, "the ref listings of one repository and credentials are shared by the 20 Releases")
}
