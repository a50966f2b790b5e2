// Package archive reads the tar+gzip archives of tenants (charts, bundles
// of manifests) as streams, bounded by a limit whatever their headers
// claim: what an archive inflates to, what each entry claims and holds, and
// its files. Its refusals are an *Error of a Kind, for the caller to
// classify (pkg/source maps each to a reason).
package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/kumodo/convoy-apiserver/pkg/bounded"
)

// MaxBundleFiles bounds the files of a bundle.
const MaxBundleFiles = 10_000

// Kind is what an Error is.
type Kind int

const (
	// KindTooLarge: past the limit (--max-artifact-bytes), or more than
	// MaxBundleFiles files.
	KindTooLarge Kind = iota + 1
	// KindUnsupported: not tar+gzip, a sparse file, a name out of the
	// root or twice, no file.
	KindUnsupported
	// KindLink: a symbolic or hard link where none may be (a chart).
	KindLink
)

// Error is a refusal of an archive.
type Error struct {
	Kind    Kind
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

func errorf(kind Kind, err error, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return &Error{Kind: kind, Message: msg, Err: err}
}

// tooLarge is the refusal of what passes limit (--max-artifact-bytes).
func tooLarge(what string, limit int64) *Error {
	return errorf(KindTooLarge, nil, "%s is larger than the limit of %d bytes (--max-artifact-bytes)", what, limit)
}

// File is a regular file of a bundle, by clean relative path.
type File struct {
	Name string
	Data []byte
}

// Link is a symbolic or hard link of a bundle, by clean relative path, and
// what it is ("a symbolic link", "a hard link").
type Link struct {
	Name, What string
}

// CheckChart reads a chart archive as a stream, keeping nothing, with the
// bounds of walk: every file counts, as Helm's loader keeps every
// file. It refuses what would make the loader, in the render's child
// process, take more than limit bytes (a decompression bomb, a header that
// claims more than is left, a sparse file): the child's memory limit would
// stop it too, but only after it had used that memory, and under a less
// telling name. An archive that is not tar+gzip is left to the render,
// which says the chart is invalid (ChartInvalid) as Helm's loader finds it.
// Every chart goes through it, whatever its source.
//
// A symbolic or hard link is refused (KindLink): Helm's loader
// reads one as an empty file, so a chart whose template is a link would
// render without it.
func CheckChart(where string, data []byte, limit int64) error {
	err := walk(where, "the chart", data, limit, func(h *tar.Header, content io.Reader) error {
		if what := linkKind(h); what != "" {
			return errorf(KindLink, nil, "%s: file %s of the chart is %s, which a chart may not hold", where, h.Name, what)
		}
		_, err := io.Copy(io.Discard, content)
		return err
	})
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	return nil
}

// Unbundle reads the regular files of a tar+gzip bundle of files, sorted
// by path (clean, relative), and the names of its symbolic and hard links,
// which it does not read (a render may not read one);
// directories and other entries are skipped. It has the bounds of
// walk: what it inflates, and the files it keeps, at most limit
// bytes; and at most MaxBundleFiles files. An entry whose name leaves the
// bundle's root (an absolute name, a .. element) or names a file twice is
// KindUnsupported: a render could not tell which file the bundle
// means.
func Unbundle(where string, data []byte, limit int64) ([]File, []Link, error) {
	var files []File
	var links []Link
	seen := map[string]bool{}
	err := walk(where, "the bundle", data, limit, func(h *tar.Header, content io.Reader) error {
		what := linkKind(h)
		if h.Typeflag != tar.TypeReg && what == "" {
			return nil
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return errorf(KindUnsupported, nil, "%s: file %q of the bundle is outside its root", where, h.Name)
		}
		if what != "" {
			links = append(links, Link{Name: name, What: what})
			return nil
		}
		if seen[name] {
			return errorf(KindUnsupported, nil, "%s: the bundle holds file %s twice", where, name)
		}
		seen[name] = true
		if len(files) == MaxBundleFiles {
			return errorf(KindTooLarge, nil, "%s: the bundle holds more than %d files", where, MaxBundleFiles)
		}
		data, err := io.ReadAll(content)
		if e, ok := errors.AsType[*Error](err); ok {
			return e
		}
		if err != nil {
			return errorf(KindUnsupported, err, "%s: file %s of the bundle", where, h.Name)
		}
		files = append(files, File{Name: name, Data: data})
		return nil
	})
	if ferr, ok := errors.AsType[*formatError](err); ok {
		if ferr.tar {
			return nil, nil, errorf(KindUnsupported, ferr.err, "%s: the bundle is not a tar archive", where)
		}
		return nil, nil, errorf(KindUnsupported, ferr.err, "%s: the bundle is not tar+gzip", where)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 && len(links) == 0 {
		return nil, nil, errorf(KindUnsupported, nil, "%s: the bundle holds no file", where)
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

// walk reads the tar+gzip archive data as a stream and calls visit with each
// entry and a reader of its content, in order, bounded by limit bytes
// whatever the headers claim: what it inflates to, what an entry claims and
// visit reads, no sparse entry (docs/contributors/internals.md, "Sources").
// The claimed size is checked first: a sparse entry that claims more than
// is left is KindTooLarge, else KindUnsupported. A refusal is an *Error,
// data that is not tar+gzip a *formatError; visit's error is returned as is.
func walk(where, what string, data []byte, limit int64, visit func(h *tar.Header, content io.Reader) error) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return &formatError{err: err}
	}
	inflated := bounded.NewReader(zr, limit, func() error { return tooLarge(where+": "+what+" inflated", limit) })
	tr := tar.NewReader(inflated)
	left := limit
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if e, ok := errors.AsType[*Error](err); ok {
			return e
		}
		if err != nil {
			return &formatError{tar: true, err: err}
		}
		if h.Size > left {
			return errorf(KindTooLarge, nil, "%s: %s inflated is larger than the limit of %d bytes (--max-artifact-bytes): its file %s claims %d bytes, %d are left",
				where, what, limit, h.Name, h.Size, left)
		}
		if isSparse(h) {
			return errorf(KindUnsupported, nil, "%s: file %s of %s is a sparse file, which is not supported", where, h.Name, what)
		}
		content := bounded.NewReader(tr, left, func() error { return tooLarge(where+": "+what+" inflated", limit) })
		err = visit(h, content)
		left = content.Left()
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
