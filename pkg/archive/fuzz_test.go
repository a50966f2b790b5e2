package archive

import (
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
)

// requireKind fails unless err is an *Error with a Kind and a message.
func requireKind(t *testing.T, err error) {
	t.Helper()
	e, ok := errors.AsType[*Error](err)
	require.True(t, ok, "not an *Error: %v", err)
	require.NotZero(t, e.Kind)
	require.NotEmpty(t, e.Message)
}

// FuzzUnbundle: any bytes as a bundle of manifests give sorted manifest
// files within the limit, or an *Error of a Kind; never a panic. The
// chart's check of an archive (CheckChart) takes the same bytes.
func FuzzUnbundle(f *testing.F) {
	for _, files := range []map[string]string{
		{"a.yaml": "kind: ConfigMap", "b/c.json": "{}", "README.md": "x"},
		{"x.txt": "no manifest"},
	} {
		data, err := ociregistry.TarGz(files)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte("not gzip"))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	// Sparse files: archive/tar would give their holes as NUL bytes it
	// never reads, a terabyte of them from a few hundred bytes.
	for _, format := range ociregistry.SparseFormats {
		for _, size := range []int64{512, 1 << 40} {
			data, err := ociregistry.SparseTarGz(format, "a.yaml", size)
			require.NoError(f, err)
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 1 << 16
		files, _, err := Unbundle("OCI example/bundle:1", data, limit)
		if cerr := CheckChart("OCI example/chart:1", data, limit); cerr != nil {
			requireKind(t, cerr)
		}
		if err != nil {
			requireKind(t, err)
			return
		}
		total := 0
		for i, file := range files {
			require.False(t, path.IsAbs(file.Name) || strings.HasPrefix(file.Name, "../"), file.Name)
			if i > 0 {
				require.LessOrEqual(t, files[i-1].Name, file.Name)
			}
			total += len(file.Data)
		}
		require.LessOrEqual(t, total, limit)
	})
}
