package ociregistry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
)

// TarEntry is an entry of TarGzEntries: a regular file of Data; or, when
// Claim is set, a header that claims Claim bytes and no data at all (the
// archive ends there); or a symbolic or hard link to Symlink or Hardlink.
type TarEntry struct {
	Name, Data        string
	Claim             int64
	Symlink, Hardlink string
}

// TarGzEntries is a tar+gzip archive of entries, in order: what the tests
// of hostile archives (bundles, charts) are made of.
func TarGzEntries(entries ...TarEntry) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Mode: 0o644, Size: int64(len(e.Data)), Typeflag: tar.TypeReg}
		switch {
		case e.Symlink != "":
			h = &tar.Header{Name: e.Name, Mode: 0o777, Typeflag: tar.TypeSymlink, Linkname: e.Symlink}
		case e.Hardlink != "":
			h = &tar.Header{Name: e.Name, Mode: 0o644, Typeflag: tar.TypeLink, Linkname: e.Hardlink}
		case e.Claim > 0:
			h.Size = e.Claim
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if e.Claim > 0 {
			// No data, no Close: the Writer would say it is missing.
			if err := zw.Close(); err != nil {
				return nil, err
			}
			return buf.Bytes(), nil
		}
		if _, err := tw.Write([]byte(e.Data)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
