// Package tartest gives the tests of hostile archives (pkg/archive's, and
// pkg/source's unbundling) their tar+gzip archives, built by
// internal/ociregistry, and fails the test on an error.
package tartest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
)

// Entry is an entry of TarGz.
type Entry = ociregistry.TarEntry

// TarGz is a tar+gzip archive of entries, in order.
func TarGz(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	data, err := ociregistry.TarGzEntries(entries...)
	require.NoError(t, err)
	return data
}

// SparseTarGz is a tar+gzip archive of one sparse file, name, of size
// bytes, written in format (ociregistry.SparseTarGz).
func SparseTarGz(t testing.TB, format ociregistry.SparseFormat, name string, size int64) []byte {
	t.Helper()
	data, err := ociregistry.SparseTarGz(format, name, size)
	require.NoError(t, err)
	return data
}
