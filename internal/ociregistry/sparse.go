package ociregistry

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strconv"
	"strings"
)

// SparseFormat is one of the ways GNU tar writes a sparse file.
type SparseFormat string

// The formats of a sparse file that Go's archive/tar reads.
const (
	// SparseOldGNU: a GNU header of type 'S' whose sparse map is in the
	// header itself, with the file's real size.
	SparseOldGNU SparseFormat = "GNU 'S'"
	// SparsePAX00: PAX records GNU.sparse.size and numblocks, and a pair of
	// records GNU.sparse.offset and GNU.sparse.numbytes per region.
	SparsePAX00 SparseFormat = "PAX 0.0"
	// SparsePAX01: PAX records GNU.sparse.size, numblocks, name, and the
	// map in one record GNU.sparse.map.
	SparsePAX01 SparseFormat = "PAX 0.1"
	// SparsePAX10: PAX records GNU.sparse.major=1, minor=0, name and
	// realsize; the map is text at the start of the entry's data.
	SparsePAX10 SparseFormat = "PAX 1.0"
)

// SparseFormats are all the SparseFormats.
var SparseFormats = []SparseFormat{SparseOldGNU, SparsePAX00, SparsePAX01, SparsePAX10}

// SparseTarGz is a tar+gzip archive of one file, name, of size bytes that
// are all a hole, written as GNU tar writes a sparse file in format: a few
// hundred bytes, whatever size says. Go's archive/tar reads it as a file of
// size NUL bytes (of type regular but for SparseOldGNU) without reading any
// more input: what a hostile archive does to claim more than it holds.
// archive/tar's Writer cannot write a sparse file, so the 512-byte headers
// are written here by hand.
func SparseTarGz(format SparseFormat, name string, size int64) ([]byte, error) {
	var tar bytes.Buffer
	// Every map has one region of no data at the end of the file, as GNU
	// tar writes a file that is all a hole.
	end := strconv.FormatInt(size, 10)
	switch format {
	case SparseOldGNU:
		h := header(name, 'S', 0, true)
		// The first entry of the map (offset, numbytes) at 386, the real
		// size at 483: GNU's oldgnu_header.
		numeric(h[386:398], size)
		numeric(h[398:410], 0)
		numeric(h[483:495], size)
		tar.Write(checksum(h))
	case SparsePAX00:
		pax(&tar, name, "GNU.sparse.size", end, "GNU.sparse.numblocks", "1", "GNU.sparse.offset", end, "GNU.sparse.numbytes", "0")
		tar.Write(checksum(header(name, '0', 0, false)))
	case SparsePAX01:
		pax(&tar, name, "GNU.sparse.size", end, "GNU.sparse.numblocks", "1", "GNU.sparse.map", end+",0", "GNU.sparse.name", name)
		tar.Write(checksum(header("GNUSparseFile.0/"+name, '0', 0, false)))
	case SparsePAX10:
		pax(&tar, name, "GNU.sparse.major", "1", "GNU.sparse.minor", "0", "GNU.sparse.name", name, "GNU.sparse.realsize", end)
		tar.Write(checksum(header("GNUSparseFile.0/"+name, '0', 512, false)))
		tar.Write(padded([]byte("1\n" + end + "\n0\n")))
	default:
		return nil, fmt.Errorf("no sparse format %q", format)
	}
	tar.Write(make([]byte, 1024)) // the end of the archive
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(tar.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// header is a 512-byte header of a file of typeflag and size bytes of
// data: USTAR, or GNU's magic when gnu; its checksum is left to checksum.
func header(name string, typeflag byte, size int64, gnu bool) []byte {
	h := make([]byte, 512)
	copy(h[0:100], name)
	numeric(h[100:108], 0o644) // mode
	numeric(h[108:116], 0)     // uid
	numeric(h[116:124], 0)     // gid
	numeric(h[124:136], size)
	numeric(h[136:148], 0) // mtime
	h[156] = typeflag
	if gnu {
		copy(h[257:265], "ustar  \x00")
	} else {
		copy(h[257:265], "ustar\x0000")
	}
	return h
}

// checksum writes the checksum of h into it, and returns it: the sum of its
// bytes with the checksum field taken as spaces, in octal.
func checksum(h []byte) []byte {
	copy(h[148:156], "        ")
	sum := 0
	for _, c := range h {
		sum += int(c)
	}
	copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return h
}

// numeric writes v into field: octal digits and a NUL when they fit, else
// base-256 (a first byte of 0x80, then big-endian), as GNU tar does for a
// size of 8 GiB or more.
func numeric(field []byte, v int64) {
	if s := strconv.FormatInt(v, 8); len(s) < len(field) {
		copy(field, strings.Repeat("0", len(field)-1-len(s))+s+"\x00")
		return
	}
	for i := len(field) - 1; i > 0; i-- {
		field[i] = byte(v)
		v >>= 8
	}
	field[0] = 0x80
}

// pax writes a PAX extended header ('x') of the records keyValues (key,
// value, key, value...) for the file name that follows it.
func pax(tar *bytes.Buffer, name string, keyValues ...string) {
	var records []byte
	for i := 0; i < len(keyValues); i += 2 {
		// A record is "LEN KEY=VALUE\n", LEN counting itself.
		rest := " " + keyValues[i] + "=" + keyValues[i+1] + "\n"
		n := len(rest) + 1
		for len(strconv.Itoa(n))+len(rest) != n {
			n++
		}
		records = append(records, strconv.Itoa(n)+rest...)
	}
	tar.Write(checksum(header("PaxHeaders.0/"+name, 'x', int64(len(records)), false)))
	tar.Write(padded(records))
}

// padded is data padded with NULs to a multiple of 512 bytes.
func padded(data []byte) []byte {
	return append(data, make([]byte, (512-len(data)%512)%512)...)
}
