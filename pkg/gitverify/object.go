package gitverify

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // Git's object ids: what names the object, not a signature's hash.
	"encoding/hex"
	"strconv"
	"strings"
)

// Object is a Git object as stored: its id (40 hex digits, SHA-1) and its
// content, what `git cat-file commit|tag ID` prints. The raw bytes, not
// go-git's decoded object: this package checks that they hash to the id
// (what is verified is the object that is rendered, whoever decoded it),
// splits the signature as git does (gpg-interface.c, commit.c), and needs
// no go-git (pkg/git is its one importer).
type Object struct {
	ID   string
	Data []byte
}

// Object types.
const (
	typeCommit = "commit"
	typeTag    = "tag"
)

// signed is an object split as git splits it: the payload that was signed
// and the signature block ("" when unsigned).
type signed struct {
	payload   []byte
	signature []byte
}

// checkID checks that o's content, as an object of type kind, hashes to
// o.ID.
func checkID(o Object, kind string) error {
	id := strings.ToLower(o.ID)
	if len(id) != 2*sha1.Size {
		return errorf(KindInvalid, nil, "the %s id %q is not a SHA-1 object id (40 hex digits)", kind, o.ID)
	}
	h := sha1.New() //nolint:gosec // See the import.
	h.Write([]byte(kind + " " + strconv.Itoa(len(o.Data)) + "\x00"))
	h.Write(o.Data)
	if got := hex.EncodeToString(h.Sum(nil)); got != id {
		return errorf(KindInvalid, nil, "the content given as %s %s is the object %s %s", kind, o.ID, kind, got)
	}
	return nil
}

// signatureBegins are the first lines of the signature blocks git knows
// (gpg-interface.c's sig formats): a line that starts with one starts a
// tag's signature.
var signatureBegins = []string{
	"-----BEGIN PGP SIGNATURE-----",
	"-----BEGIN PGP MESSAGE-----",
	"-----BEGIN SSH SIGNATURE-----",
	"-----BEGIN SIGNED MESSAGE-----",
	"-----BEGIN CERTIFICATE-----",
}

// splitTag splits a tag object as git's parse_signed_buffer does: the
// signature starts at the last line that begins a signature block, and
// runs to the end.
func splitTag(data []byte) signed {
	match := -1
	for n := 0; n < len(data); {
		line := data[n:]
		for _, begin := range signatureBegins {
			if bytes.HasPrefix(line, []byte(begin)) {
				match = n
				break
			}
		}
		eol := bytes.IndexByte(line, '\n')
		if eol < 0 {
			break
		}
		n += eol + 1
	}
	if match < 0 {
		return signed{payload: data}
	}
	return signed{payload: data[:match], signature: data[match:]}
}

// splitCommit splits a commit object as git's
// parse_buffer_signed_by_header does for a SHA-1 repository: the
// signature is the value of the "gpgsig" header and its continuation
// lines (a leading space each); the payload is the object without it, and
// without a "gpgsig-sha256" header (the signature of the SHA-256 form).
// The headers end at the first empty line; the rest is the message.
func splitCommit(data []byte) signed {
	var s signed
	payload := make([]byte, 0, len(data))
	inSignature, other := false, false
	for n := 0; n < len(data); {
		line := data[n:]
		next := len(data)
		if eol := bytes.IndexByte(line, '\n'); eol >= 0 {
			next = n + eol + 1
		}
		line = data[n:next]
		var sig []byte
		switch {
		case inSignature && line[0] == ' ':
			sig = line[1:]
		case bytes.HasPrefix(line, []byte("gpgsig ")):
			sig, other = line[len("gpgsig "):], false
		case bytes.HasPrefix(line, []byte("gpgsig")):
			other = true
		case other && line[0] != ' ':
			other = false
		}
		if sig != nil {
			s.signature = append(s.signature, sig...)
			inSignature = true
		} else {
			if line[0] == '\n' {
				// The message: the rest, as it is.
				next = len(data)
			}
			if !other {
				payload = append(payload, data[n:next]...)
			}
			inSignature = false
		}
		n = next
	}
	s.payload = payload
	return s
}

// tagHeader is what a tag object names: the object it tags and its type,
// and the tag's name.
type tagHeader struct {
	object, kind, name string
}

// parseTagHeader reads the headers of a tag object (up to the first empty
// line): "object", "type" and "tag".
func parseTagHeader(data []byte) tagHeader {
	var h tagHeader
	for line := range bytes.Lines(data) {
		text := strings.TrimSuffix(string(line), "\n")
		if text == "" {
			break
		}
		key, value, _ := strings.Cut(text, " ")
		switch key {
		case "object":
			h.object = value
		case "type":
			h.kind = value
		case "tag":
			h.name = value
		}
	}
	return h
}
