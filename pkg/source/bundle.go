package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// maxBundleFiles bounds the files of a bundle of manifests.
const maxBundleFiles = 10_000

// checkInflated refuses a chart archive that inflates past limit bytes
// (a decompression bomb), reading it as a stream: nothing is kept. The
// render's child process would stop it too, at its memory limit, but only
// after it had used that memory; this says which limit it is. An archive
// that is not gzip is left to the render, which says the chart is invalid
// (ChartInvalid) as it does for a chart of a ConfigMap.
func checkInflated(where string, data []byte, limit int64) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil
	}
	inflated := &limitedBody{ReadCloser: io.NopCloser(zr), left: limit, what: where + ": the chart inflated", limit: limit}
	if _, err := io.Copy(io.Discard, inflated); err != nil {
		if f, ok := failure.As(err); ok {
			return f
		}
	}
	return nil
}

// unbundle reads the .yaml, .yml and .json files of a tar+gzip bundle of
// manifests, sorted by path; other files are skipped. What it inflates is
// bounded by limit (a decompression bomb is refused after limit bytes,
// never inflated whole), and so are the files it keeps.
func unbundle(where string, data []byte, limit int64) ([]File, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, failure.New(ReasonArtifactUnsupported, err, "%s: the bundle is not tar+gzip", where)
	}
	inflated := &limitedBody{ReadCloser: io.NopCloser(zr), left: limit, what: where + ": the bundle inflated", limit: limit}
	tr := tar.NewReader(inflated)
	var files []File
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if f, ok := failure.As(err); ok {
			return nil, f
		}
		if err != nil {
			return nil, failure.New(ReasonArtifactUnsupported, err, "%s: the bundle is not a tar archive", where)
		}
		if h.Typeflag != tar.TypeReg || !IsManifestFile(h.Name) {
			continue
		}
		if len(files) == maxBundleFiles {
			return nil, failure.New(ReasonArtifactTooLarge, nil, "%s: the bundle holds more than %d manifest files", where, maxBundleFiles)
		}
		content, err := io.ReadAll(tr)
		if f, ok := failure.As(err); ok {
			return nil, f
		}
		if err != nil {
			return nil, failure.New(ReasonArtifactUnsupported, err, "%s: file %s of the bundle", where, h.Name)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		files = append(files, File{Name: name, Where: where + " file " + name, Data: content})
	}
	if len(files) == 0 {
		return nil, failure.New(ReasonArtifactUnsupported, nil, "%s: the bundle holds no file ending .yaml, .yml or .json", where)
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return files, nil
}
