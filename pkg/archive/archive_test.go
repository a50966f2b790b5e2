package archive

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/internal/tartest"
)

// A bundle's symbolic and hard links are not read but listed; every link
// of a chart is refused (KindLink): Helm's loader reads one as an empty
// file.
func TestLinks(t *testing.T) {
	bundle := tartest.TarGz(t,
		tartest.Entry{Name: "apps/web/deploy.yaml", Data: "kind: Deployment"},
		tartest.Entry{Name: "apps/web/passwd.yaml", Symlink: "/etc/passwd"},
		tartest.Entry{Name: "apps/api/copy.yaml", Hardlink: "apps/web/deploy.yaml"},
	)
	files, links, err := Unbundle("OCI example/bundle:1", bundle, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, []File{{Name: "apps/web/deploy.yaml", Data: []byte("kind: Deployment")}}, files)
	assert.Equal(t, []Link{{"apps/web/passwd.yaml", "a symbolic link"}, {"apps/api/copy.yaml", "a hard link"}}, links)

	for _, e := range []tartest.Entry{{Name: "web/templates/cm.yaml", Symlink: "/etc/passwd"}, {Name: "web/templates/copy.yaml", Hardlink: "web/Chart.yaml"}} {
		chart := tartest.TarGz(t, tartest.Entry{Name: "web/Chart.yaml", Data: "apiVersion: v2\nname: web\nversion: 1.0.0\n"}, e)
		ferr, ok := errors.AsType[*Error](CheckChart("OCI example/chart:1", chart, 1<<20))
		require.True(t, ok, e.Name)
		assert.Equal(t, KindLink, ferr.Kind)
		assert.Contains(t, ferr.Message, "OCI example/chart:1: file "+e.Name+" of the chart is a ")
	}
	assert.NoError(t, CheckChart("OCI example/chart:1", []byte("not an archive"), 1<<20), "left to Helm's loader")
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
		kind    Kind
		message string
		// huge: the archive claims a terabyte, and reading it must
		// allocate next to nothing.
		huge bool
	}
	var cases []archiveCase
	for _, format := range ociregistry.SparseFormats {
		cases = append(cases,
			archiveCase{name: fmt.Sprintf("sparse %s of 1 TiB", format), data: tartest.SparseTarGz(t, format, "big.yaml", 1<<40), huge: true,
				kind: KindTooLarge, message: "inflated is larger than the limit of 65536 bytes (--max-artifact-bytes): its file big.yaml claims 1099511627776 bytes, 65536 are left"},
			archiveCase{name: fmt.Sprintf("sparse %s within the limit", format), data: tartest.SparseTarGz(t, format, "small.yaml", 512),
				kind: KindUnsupported, message: "file small.yaml of the %s is a sparse file, which is not supported"},
		)
	}
	cases = append(cases,
		archiveCase{name: "a header that claims 1 TiB", data: tartest.TarGz(t, tartest.Entry{Name: "big.yaml", Claim: 1 << 40}), huge: true,
			kind: KindTooLarge, message: "its file big.yaml claims 1099511627776 bytes, 65536 are left"},
		archiveCase{name: "a header that claims more than is left", data: tartest.TarGz(t, tartest.Entry{Name: "a.yaml", Data: strings.Repeat("a", 40<<10)}, tartest.Entry{Name: "b.yaml", Data: strings.Repeat("b", 40<<10)}),
			kind: KindTooLarge, message: "its file b.yaml claims 40960 bytes, 24576 are left"},
	)
	for _, tc := range cases {
		for _, reader := range []struct {
			what string
			read func(data []byte) error
		}{
			{"bundle", func(data []byte) error { _, _, err := Unbundle("OCI example/bundle:1", data, limit); return err }},
			{"chart", func(data []byte) error { return CheckChart("OCI example/chart:1", data, limit) }},
		} {
			t.Run(reader.what+"/"+tc.name, func(t *testing.T) {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				err := reader.read(tc.data)
				runtime.ReadMemStats(&after)
				ferr, ok := errors.AsType[*Error](err)
				require.True(t, ok, "not an *Error: %v", err)
				assert.Equal(t, tc.kind, ferr.Kind, ferr.Message)
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
	files, _, err := Unbundle("OCI example/bundle:1", tartest.TarGz(t,
		tartest.Entry{Name: "README.md", Data: strings.Repeat("r", 1000)},
		tartest.Entry{Name: "b.yaml", Data: strings.Repeat("b", 1500)},
		tartest.Entry{Name: "./a.yaml", Data: strings.Repeat("a", 1500)},
	), limit)
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"README.md", "a.yaml", "b.yaml"}, names)

	var many []tartest.Entry
	for i := range 10 {
		many = append(many, tartest.Entry{Name: fmt.Sprintf("blob-%d.bin", i), Data: strings.Repeat("x", 1000)})
	}
	_, _, err = Unbundle("OCI example/bundle:1", tartest.TarGz(t, append(many, tartest.Entry{Name: "a.yaml", Data: "kind: ConfigMap"})...), limit)
	ferr, ok := errors.AsType[*Error](err)
	require.True(t, ok, "not an *Error: %v", err)
	assert.Equal(t, KindTooLarge, ferr.Kind)
	assert.Contains(t, ferr.Message, "OCI example/bundle:1: the bundle inflated is larger than the limit of 8192 bytes (--max-artifact-bytes)")
}

// A bundle whose entry leaves its root, or names a file twice, is refused:
// a render could not tell which file it means.
func TestUnbundleRefusesAmbiguousNames(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []tartest.Entry
		message string
	}{
		{"parent", []tartest.Entry{{Name: "../etc/passwd", Data: "x"}}, `file "../etc/passwd" of the bundle is outside its root`},
		{"absolute", []tartest.Entry{{Name: "/etc/passwd", Data: "x"}}, `file "/etc/passwd" of the bundle is outside its root`},
		{"twice", []tartest.Entry{{Name: "a.yaml", Data: "x"}, {Name: "./a.yaml", Data: "y"}}, "the bundle holds file a.yaml twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Unbundle("OCI example/bundle:1", tartest.TarGz(t, tc.entries...), 1<<20)
			ferr, ok := errors.AsType[*Error](err)
			require.True(t, ok, "not an *Error: %v", err)
			assert.Equal(t, KindUnsupported, ferr.Kind)
			assert.Contains(t, ferr.Message, tc.message)
		})
	}
}
