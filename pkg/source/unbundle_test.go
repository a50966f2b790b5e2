package source

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/internal/tartest"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// A bundle's symbolic and hard links are not read: a link under the
// rendered path is refused (a manifest that is a link would otherwise drop
// out of the render), one elsewhere is listed in Source.Links. Every link
// of a chart is refused: Helm's loader reads one as an empty file.
func TestLinksRefused(t *testing.T) {
	bundle := tartest.TarGz(t,
		tartest.Entry{Name: "apps/web/deploy.yaml", Data: "kind: Deployment"},
		tartest.Entry{Name: "apps/web/passwd.yaml", Symlink: "/etc/passwd"},
		tartest.Entry{Name: "apps/api/deploy.yaml", Data: "kind: Deployment"},
		tartest.Entry{Name: "apps/api/copy.yaml", Hardlink: "apps/web/deploy.yaml"},
		tartest.Entry{Name: "base", Symlink: "apps/web"},
	)
	files, links, err := unbundle("OCI example/bundle:1", bundle, 1<<20)
	require.NoError(t, err)
	assert.Len(t, files, 2)
	assert.Equal(t, []link{{"apps/web/passwd.yaml", "a symbolic link"}, {"apps/api/copy.yaml", "a hard link"}, {"base", "a symbolic link"}}, links)

	for _, tc := range []struct {
		dir, refused string
		elsewhere    []string
	}{
		{dir: "", refused: "apps/web/passwd.yaml is a symbolic link"},
		{dir: "apps/web", refused: "apps/web/passwd.yaml is a symbolic link"},
		{dir: "apps/api", refused: "apps/api/copy.yaml is a hard link"},
		{dir: "apps/db", elsewhere: []string{"apps/web/passwd.yaml", "apps/api/copy.yaml", "base"}},
	} {
		elsewhere, err := checkLinks("OCI example/bundle:1", links, tc.dir)
		if tc.refused == "" {
			require.NoError(t, err, tc.dir)
			assert.Equal(t, tc.elsewhere, elsewhere, tc.dir)
			continue
		}
		ferr, ok := failure.As(err)
		require.True(t, ok, "%s: not a failure: %v", tc.dir, err)
		assert.Equal(t, failure.ReasonLinkUnsupported, ferr.Reason)
		assert.Contains(t, ferr.Message, "OCI example/bundle:1: "+tc.refused+", which a source does not follow")
	}

	for _, e := range []tartest.Entry{{Name: "web/templates/cm.yaml", Symlink: "/etc/passwd"}, {Name: "web/templates/copy.yaml", Hardlink: "web/Chart.yaml"}} {
		chart := tartest.TarGz(t, tartest.Entry{Name: "web/Chart.yaml", Data: "apiVersion: v2\nname: web\nversion: 1.0.0\n"}, e)
		ferr, ok := failure.As(checkChart("OCI example/chart:1", chart, 1<<20))
		require.True(t, ok, e.Name)
		assert.Equal(t, failure.ReasonLinkUnsupported, ferr.Reason)
		assert.Contains(t, ferr.Message, "OCI example/chart:1: file "+e.Name+" of the chart is a ")
	}
}

// CleanPath refuses what leaves the source's root and cleans the rest.
func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{"": "", ".": "", "overlays/prod/": "overlays/prod", "./a//b": "a/b", "a..b/c": "a..b/c"} {
		got, err := CleanPath(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"/abs", "..", "a/../../b", "a/.."} {
		_, err := CleanPath(in)
		ferr, ok := failure.As(err)
		require.True(t, ok, "%q: not a failure: %v", in, err)
		assert.Equal(t, sourcefailure.ReasonSourceInvalid, ferr.Reason, in)
	}
}

// A chart of a source ConfigMap gets the same checks as a chart of a
// registry or a repository.
func TestConfigMapChartChecked(t *testing.T) {
	f, _ := newFetcher(t, func(o *Options) { o.MaxArtifactBytes = 1 << 20 })
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "chart"}}}}
	for _, tc := range []struct {
		name, reason, message string
		chart                 []byte
	}{
		{name: "sparse file of 1 GiB", chart: tartest.SparseTarGz(t, ociregistry.SparsePAX10, "web/templates/big.yaml", 1<<30), reason: sourcefailure.ReasonArtifactTooLarge,
			message: "ConfigMap shop/chart binaryData chart.tgz: the chart inflated is larger than the limit of 1048576 bytes (--max-artifact-bytes): its file web/templates/big.yaml claims 1073741824 bytes"},
		{name: "sparse file", chart: tartest.SparseTarGz(t, ociregistry.SparseOldGNU, "web/templates/x.yaml", 4096), reason: sourcefailure.ReasonArtifactUnsupported,
			message: "ConfigMap shop/chart binaryData chart.tgz: file web/templates/x.yaml of the chart is a sparse file"},
		{name: "decompression bomb", chart: tartest.TarGz(t, tartest.Entry{Name: "web/templates/x.yaml", Data: strings.Repeat(" ", 2<<20)}), reason: sourcefailure.ReasonArtifactTooLarge,
			message: "the chart inflated is larger than the limit of 1048576 bytes (--max-artifact-bytes)"},
		{name: "a template that is a link", chart: tartest.TarGz(t, tartest.Entry{Name: "web/Chart.yaml", Data: "name: web"}, tartest.Entry{Name: "web/templates/x.yaml", Symlink: "/etc/passwd"}),
			reason: failure.ReasonLinkUnsupported, message: "ConfigMap shop/chart binaryData chart.tgz: file web/templates/x.yaml of the chart is a symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "chart"}, BinaryData: map[string][]byte{ChartKey: tc.chart}}
			ferr := fetchErr(t, f, release, inputsOf(cm), tc.reason)
			assert.Contains(t, ferr.Message, tc.message)
		})
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "chart"}, BinaryData: map[string][]byte{ChartKey: chartTGZ}}
	src, err := f.Fetch(context.Background(), release, inputsOf(cm))
	require.NoError(t, err, "an archive that is not tar+gzip is left to the render")
	assert.Equal(t, chartTGZ, src.Chart)
}
