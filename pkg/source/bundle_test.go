package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// entry is a file of tarGz: data, or when claim is set a header that claims
// claim bytes and no data at all (the archive ends there).
type entry struct {
	name, data string
	claim      int64
	// symlink or hardlink makes the entry a link to that name.
	symlink, hardlink string
}

// tarGz is a tar+gzip archive of entries, in order.
func tarGz(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		switch {
		case e.symlink != "":
			require.NoError(t, tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o777, Typeflag: tar.TypeSymlink, Linkname: e.symlink}))
			continue
		case e.hardlink != "":
			require.NoError(t, tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Typeflag: tar.TypeLink, Linkname: e.hardlink}))
			continue
		}
		size := int64(len(e.data))
		if e.claim > 0 {
			size = e.claim
		}
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}))
		if e.claim > 0 {
			// No data, no Close: the Writer would say it is missing.
			require.NoError(t, zw.Close())
			return buf.Bytes()
		}
		_, err := tw.Write([]byte(e.data))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func sparseTarGz(t *testing.T, format ociregistry.SparseFormat, name string, size int64) []byte {
	t.Helper()
	data, err := ociregistry.SparseTarGz(format, name, size)
	require.NoError(t, err)
	return data
}

// Both readers of archives, the bundle's and the chart's, refuse a header
// that claims more than is left of the limit, and a sparse file, before
// they read its content; a 1 TiB claim of a few hundred bytes allocates
// next to nothing. What is inflated stays bounded too.
func TestArchiveBounds(t *testing.T) {
	// Headers count as what is inflated: room for a few of them.
	const limit = 64 << 10
	type archiveCase struct {
		name    string
		data    []byte
		reason  string
		message string
		// huge: the archive claims a terabyte, and reading it must
		// allocate next to nothing.
		huge bool
	}
	var cases []archiveCase
	for _, format := range ociregistry.SparseFormats {
		cases = append(cases,
			archiveCase{name: fmt.Sprintf("sparse %s of 1 TiB", format), data: sparseTarGz(t, format, "big.yaml", 1<<40), huge: true,
				reason: ReasonArtifactTooLarge, message: "inflated is larger than the limit of 65536 bytes (--max-artifact-bytes): its file big.yaml claims 1099511627776 bytes, 65536 are left"},
			archiveCase{name: fmt.Sprintf("sparse %s within the limit", format), data: sparseTarGz(t, format, "small.yaml", 512),
				reason: ReasonArtifactUnsupported, message: "file small.yaml of the %s is a sparse file, which is not supported"},
		)
	}
	cases = append(cases,
		archiveCase{name: "a header that claims 1 TiB", data: tarGz(t, entry{name: "big.yaml", claim: 1 << 40}), huge: true,
			reason: ReasonArtifactTooLarge, message: "its file big.yaml claims 1099511627776 bytes, 65536 are left"},
		archiveCase{name: "a header that claims more than is left", data: tarGz(t, entry{name: "a.yaml", data: strings.Repeat("a", 40<<10)}, entry{name: "b.yaml", data: strings.Repeat("b", 40<<10)}),
			reason: ReasonArtifactTooLarge, message: "its file b.yaml claims 40960 bytes, 24576 are left"},
	)
	for _, tc := range cases {
		for _, reader := range []struct {
			what string
			read func(data []byte) error
		}{
			{"bundle", func(data []byte) error { _, _, err := unbundle("OCI example/bundle:1", data, limit); return err }},
			{"chart", func(data []byte) error { return checkChart("OCI example/chart:1", data, limit) }},
		} {
			t.Run(reader.what+"/"+tc.name, func(t *testing.T) {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				err := reader.read(tc.data)
				runtime.ReadMemStats(&after)
				ferr, ok := failure.As(err)
				require.True(t, ok, "not a failure: %v", err)
				assert.Equal(t, tc.reason, ferr.Reason, ferr.Message)
				message := tc.message
				if strings.Contains(message, "%s") {
					message = fmt.Sprintf(message, reader.what)
				}
				assert.Contains(t, ferr.Message, message)
				if tc.huge {
					assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "refused before it was read")
				}
			})
		}
	}
}

// A bundle keeps its regular files within the limit, by clean path, and
// is refused when what it inflates to passes the limit.
func TestUnbundleKeepsWithinTheLimit(t *testing.T) {
	const limit = 8192
	files, _, err := unbundle("OCI example/bundle:1", tarGz(t,
		entry{name: "README.md", data: strings.Repeat("r", 1000)},
		entry{name: "b.yaml", data: strings.Repeat("b", 1500)},
		entry{name: "./a.yaml", data: strings.Repeat("a", 1500)},
	), limit)
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"README.md", "a.yaml", "b.yaml"}, names)

	var many []entry
	for i := range 10 {
		many = append(many, entry{name: fmt.Sprintf("blob-%d.bin", i), data: strings.Repeat("x", 1000)})
	}
	_, _, err = unbundle("OCI example/bundle:1", tarGz(t, append(many, entry{name: "a.yaml", data: "kind: ConfigMap"})...), limit)
	ferr, ok := failure.As(err)
	require.True(t, ok, "not a failure: %v", err)
	assert.Equal(t, ReasonArtifactTooLarge, ferr.Reason)
	assert.Contains(t, ferr.Message, "OCI example/bundle:1: the bundle inflated is larger than the limit of 8192 bytes (--max-artifact-bytes)")
}

// A bundle whose entry leaves its root, or names a file twice, is refused:
// a render could not tell which file it means.
func TestUnbundleRefusesAmbiguousNames(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []entry
		message string
	}{
		{"parent", []entry{{name: "../etc/passwd", data: "x"}}, `file "../etc/passwd" of the bundle is outside its root`},
		{"absolute", []entry{{name: "/etc/passwd", data: "x"}}, `file "/etc/passwd" of the bundle is outside its root`},
		{"twice", []entry{{name: "a.yaml", data: "x"}, {name: "./a.yaml", data: "y"}}, "the bundle holds file a.yaml twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := unbundle("OCI example/bundle:1", tarGz(t, tc.entries...), 1<<20)
			ferr, ok := failure.As(err)
			require.True(t, ok, "not a failure: %v", err)
			assert.Equal(t, ReasonArtifactUnsupported, ferr.Reason)
			assert.Contains(t, ferr.Message, tc.message)
		})
	}
}

// A bundle's symbolic and hard links are not read: a link under the
// rendered path is refused (a manifest that is a link would otherwise drop
// out of the render), one elsewhere is listed in Source.Links. Every link
// of a chart is refused: Helm's loader reads one as an empty file.
func TestLinksRefused(t *testing.T) {
	bundle := tarGz(t,
		entry{name: "apps/web/deploy.yaml", data: "kind: Deployment"},
		entry{name: "apps/web/passwd.yaml", symlink: "/etc/passwd"},
		entry{name: "apps/api/deploy.yaml", data: "kind: Deployment"},
		entry{name: "apps/api/copy.yaml", hardlink: "apps/web/deploy.yaml"},
		entry{name: "base", symlink: "apps/web"},
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

	for _, e := range []entry{{name: "web/templates/cm.yaml", symlink: "/etc/passwd"}, {name: "web/templates/copy.yaml", hardlink: "web/Chart.yaml"}} {
		chart := tarGz(t, entry{name: "web/Chart.yaml", data: "apiVersion: v2\nname: web\nversion: 1.0.0\n"}, e)
		ferr, ok := failure.As(checkChart("OCI example/chart:1", chart, 1<<20))
		require.True(t, ok, e.name)
		assert.Equal(t, failure.ReasonLinkUnsupported, ferr.Reason)
		assert.Contains(t, ferr.Message, "OCI example/chart:1: file "+e.name+" of the chart is a ")
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
		assert.Equal(t, ReasonSourceInvalid, ferr.Reason, in)
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
		{name: "sparse file of 1 GiB", chart: sparseTarGz(t, ociregistry.SparsePAX10, "web/templates/big.yaml", 1<<30), reason: ReasonArtifactTooLarge,
			message: "ConfigMap shop/chart binaryData chart.tgz: the chart inflated is larger than the limit of 1048576 bytes (--max-artifact-bytes): its file web/templates/big.yaml claims 1073741824 bytes"},
		{name: "sparse file", chart: sparseTarGz(t, ociregistry.SparseOldGNU, "web/templates/x.yaml", 4096), reason: ReasonArtifactUnsupported,
			message: "ConfigMap shop/chart binaryData chart.tgz: file web/templates/x.yaml of the chart is a sparse file"},
		{name: "decompression bomb", chart: tarGz(t, entry{name: "web/templates/x.yaml", data: strings.Repeat(" ", 2<<20)}), reason: ReasonArtifactTooLarge,
			message: "the chart inflated is larger than the limit of 1048576 bytes (--max-artifact-bytes)"},
		{name: "a template that is a link", chart: tarGz(t, entry{name: "web/Chart.yaml", data: "name: web"}, entry{name: "web/templates/x.yaml", symlink: "/etc/passwd"}),
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
