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

// maxBundleFiles bounds the files of a bundle.
const maxBundleFiles = 10_000

// checkChart reads a chart archive as a stream, keeping nothing, with the
// bounds of walkArchive: every file counts, as Helm's loader keeps every
// file. It refuses what would make the loader, in the render's child
// process, take more than limit bytes (a decompression bomb, a header that
// claims more than is left, a sparse file): the child's memory limit would
// stop it too, but only after it had used that memory, and under a less
// telling name. An archive that is not tar+gzip is left to the render,
// which says the chart is invalid (ChartInvalid) as Helm's loader finds it.
// Every chart goes through it, whatever its source.
//
// A symbolic or hard link is refused (LinkUnsupported): Helm's loader
// reads one as an empty file, so a chart whose template is a link would
// render without it.
func checkChart(where string, data []byte, limit int64) error {
	err := walkArchive(where, "the chart", data, limit, func(h *tar.Header, content io.Reader) error {
		if what := linkKind(h); what != "" {
			return failure.New(failure.ReasonLinkUnsupported, nil, "%s: file %s of the chart is %s, which a chart may not hold", where, h.Name, what)
		}
		_, err := io.Copy(io.Discard, content)
		return err
	})
	if f, ok := failure.As(err); ok {
		return f
	}
	return nil
}

// unbundle reads the regular files of a tar+gzip bundle of files, sorted
// by path (clean, relative), and the names of its symbolic and hard links,
// which it does not read (a render may not read one: checkLinks);
// directories and other entries are skipped. It has the bounds of
// walkArchive: what it inflates, and the files it keeps, at most limit
// bytes; and at most maxBundleFiles files. An entry whose name leaves the
// bundle's root (an absolute name, a .. element) or names a file twice is
// ArtifactUnsupported: a render could not tell which file the bundle
// means.
func unbundle(where string, data []byte, limit int64) ([]File, []link, error) {
	var files []File
	var links []link
	seen := map[string]bool{}
	err := walkArchive(where, "the bundle", data, limit, func(h *tar.Header, content io.Reader) error {
		what := linkKind(h)
		if h.Typeflag != tar.TypeReg && what == "" {
			return nil
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return failure.New(ReasonArtifactUnsupported, nil, "%s: file %q of the bundle is outside its root", where, h.Name)
		}
		if what != "" {
			links = append(links, link{name: name, what: what})
			return nil
		}
		if seen[name] {
			return failure.New(ReasonArtifactUnsupported, nil, "%s: the bundle holds file %s twice", where, name)
		}
		seen[name] = true
		if len(files) == maxBundleFiles {
			return failure.New(ReasonArtifactTooLarge, nil, "%s: the bundle holds more than %d files", where, maxBundleFiles)
		}
		data, err := io.ReadAll(content)
		if f, ok := failure.As(err); ok {
			return f
		}
		if err != nil {
			return failure.New(ReasonArtifactUnsupported, err, "%s: file %s of the bundle", where, h.Name)
		}
		files = append(files, File{Name: name, Where: where + " file " + name, Data: data})
		return nil
	})
	if ferr, ok := errors.AsType[*formatError](err); ok {
		if ferr.tar {
			return nil, nil, failure.New(ReasonArtifactUnsupported, ferr.err, "%s: the bundle is not a tar archive", where)
		}
		return nil, nil, failure.New(ReasonArtifactUnsupported, ferr.err, "%s: the bundle is not tar+gzip", where)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 && len(links) == 0 {
		return nil, nil, failure.New(ReasonArtifactUnsupported, nil, "%s: the bundle holds no file", where)
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return files, links, nil
}

// linkKind names the link h is ("a symbolic link", "a hard link"), "" for
// another entry.
func linkKind(h *tar.Header) string {
	switch h.Typeflag {
	case tar.TypeSymlink:
		return "a symbolic link"
	case tar.TypeLink:
		return "a hard link"
	}
	return ""
}

// link is a link of a bundle or a commit, by name, and what it is ("a
// symbolic link", "a hard link", "a submodule (gitlink)").
type link struct {
	name, what string
}

// checkLinks refuses a link under dir ("" the root) of the source where:
// its target is not in the source (a
// link may point to /etc/passwd), so a render that needed it could not be
// made; no link is read, nor dropped in silence. It returns the names of
// the links elsewhere (Source.Links), which a render may not read either.
func checkLinks(where string, links []link, dir string) ([]string, error) {
	var elsewhere []string
	for _, l := range links {
		if dir != "" && l.name != dir && !strings.HasPrefix(l.name, dir+"/") {
			elsewhere = append(elsewhere, l.name)
			continue
		}
		return nil, failure.New(failure.ReasonLinkUnsupported, nil, "%s: %s is %s, which a source does not follow", where, l.name, l.what)
	}
	return elsewhere, nil
}

// walkArchive reads the tar+gzip archive data as a stream, and calls visit
// with each entry and a reader of its content, in order. What an archive
// costs is bounded by limit bytes, whatever its headers say:
//
//   - what it inflates to: a decompression bomb is refused after limit
//     bytes, never inflated whole;
//   - what visit reads: an entry whose header claims more bytes than are
//     left of limit (limit less what visit read of the entries before it)
//     is refused before a byte of it is read, and its content fails past
//     what is left anyway;
//   - a sparse entry is refused (GNU tar's type 'S', or the PAX records
//     GNU.sparse.* of formats 0.0, 0.1 and 1.0): archive/tar gives its
//     holes as NUL bytes it never reads, so a header of a few hundred bytes
//     could claim a file of a terabyte and pass the bound on inflation.
//
// The size a header claims is checked first: a sparse entry that claims
// more than is left is ArtifactTooLarge like any other, one within the
// limit ArtifactUnsupported. A refusal is a *failure.Error; an archive that
// is not tar+gzip is a *formatError; an error of visit is returned as it is.
func walkArchive(where, what string, data []byte, limit int64, visit func(h *tar.Header, content io.Reader) error) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return &formatError{err: err}
	}
	inflated := &limitedBody{ReadCloser: io.NopCloser(zr), left: limit, what: where + ": " + what + " inflated", limit: limit}
	tr := tar.NewReader(inflated)
	left := limit
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if f, ok := failure.As(err); ok {
			return f
		}
		if err != nil {
			return &formatError{tar: true, err: err}
		}
		if h.Size > left {
			return failure.New(ReasonArtifactTooLarge, nil, "%s: %s inflated is larger than the limit of %d bytes (--max-artifact-bytes): its file %s claims %d bytes, %d are left",
				where, what, limit, h.Name, h.Size, left)
		}
		if isSparse(h) {
			return failure.New(ReasonArtifactUnsupported, nil, "%s: file %s of %s is a sparse file, which is not supported", where, h.Name, what)
		}
		content := &limitedBody{ReadCloser: io.NopCloser(tr), left: left, what: where + ": " + what + " inflated", limit: limit}
		err = visit(h, content)
		left = content.left
		if err != nil {
			return err
		}
	}
}

// isSparse reports whether h is a sparse file: GNU tar's type 'S', or a
// file with PAX records of GNU sparse files, which archive/tar presents as
// a regular file (any version, known to archive/tar or not).
func isSparse(h *tar.Header) bool {
	if h.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// formatError is an archive that is not tar+gzip: gzip's error, or tar's
// when tar is set.
type formatError struct {
	tar bool
	err error
}

func (e *formatError) Error() string { return e.err.Error() }

func (e *formatError) Unwrap() error { return e.err }
