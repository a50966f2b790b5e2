// Package jsonobjects decodes a JSON array of objects one object at a
// time, within limits, whatever the array holds: it stops at the first
// object past a count, at the first string past a length before it is
// buffered whole, and never buffers a run of white space. pkg/render reads
// stored renders with it, pkg/sandbox the answers of its children.
package jsonobjects

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Decode decodes a JSON array of objects from r one object at a time, and
// stops with tooMany's error at the first object past maxObjects, so that
// an array past the limit is never decoded whole (nor held twice, as JSON
// and as objects). With maxString above 0, it stops with ErrStringTooLong
// at the first string longer than maxString bytes (squashSpace), before
// the decoder buffers it whole. An error of r is returned as it is.
func Decode(r io.Reader, maxObjects, maxString int, tooMany func() error) ([]*unstructured.Unstructured, error) {
	dec := json.NewDecoder(&squashSpace{r: r, maxString: maxString})
	if tok, err := dec.Token(); err != nil {
		return nil, err
	} else if tok != json.Delim('[') {
		return nil, fmt.Errorf("not a JSON array but %v", tok)
	}
	var objects []*unstructured.Unstructured
	for i := 0; dec.More(); i++ {
		if i == maxObjects {
			return nil, tooMany()
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		var obj map[string]any
		// utiljson keeps integers int64, as the decoders of unstructured do.
		if err := utiljson.Unmarshal(raw, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("item %d is not an object", i)
		}
		objects = append(objects, &unstructured.Unstructured{Object: obj})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return objects, nil
}

// squashSpace reads JSON from r with every run of white space outside
// strings cut to one space. json.Decoder keeps in its buffer the white space
// it skips before a token, so an array of 300 MB of spaces between two
// objects would fill memory up to the limit of bytes (and twice that while
// the buffer grows); cut, it holds one byte. A run is kept as one space
// so that two tokens never run into one another.
//
// With maxString above 0, it also fails with ErrStringTooLong once a string
// (a key or a value) is longer than maxString bytes decoded, so that the
// decoder never buffers a longer one: a byte counts one, an escape the
// bytes it decodes to (\uXXXX its UTF-8 length, a surrogate pair's half
// three), so a string that decodes to maxString bytes or fewer is never
// refused, whatever encoding/json escaped in it (<, > and & among others).
type squashSpace struct {
	r         io.Reader
	maxString int
	inString  bool
	escaped   bool
	// hex is how many hex digits of a \u escape are left; code is the
	// code unit of those read.
	hex  int
	code rune
	// length is what the string read so far decodes to, at most.
	length int
	space  bool // the last byte given was white space outside a string
}

func (s *squashSpace) Read(p []byte) (int, error) {
	for {
		n, err := s.r.Read(p)
		out := 0
		for _, c := range p[:n] {
			switch {
			case s.inString:
				switch {
				case s.hex > 0:
					s.code, s.hex = s.code<<4|unhex(c), s.hex-1
					if s.hex == 0 {
						s.length += escapedLength(s.code)
					}
				case s.escaped:
					s.escaped = false
					if c == 'u' {
						s.hex, s.code = 4, 0
					} else {
						s.length++
					}
				case c == '\\':
					s.escaped = true
				case c == '"':
					s.inString = false
				default:
					s.length++
				}
				if s.maxString > 0 && s.length > s.maxString {
					return out, ErrStringTooLong
				}
			case c == ' ' || c == '\t' || c == '\n' || c == '\r':
				if s.space {
					continue
				}
				s.space = true
				p[out] = ' '
				out++
				continue
			case c == '"':
				s.inString, s.length = true, 0
			}
			s.space = false
			p[out] = c
			out++
		}
		if out > 0 || err != nil || n == 0 {
			return out, err
		}
	}
}

// unhex is the value of the hex digit c (0 for another byte: the JSON is
// not valid, and the decoder says so).
func unhex(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return 0
}

// escapedLength is the most bytes the code unit of a \uXXXX escape decodes
// to: its UTF-8 length, three for a surrogate (a pair's two halves are four
// bytes, a lone one the replacement character's three).
func escapedLength(code rune) int {
	switch {
	case code < 0x80:
		return 1
	case code < 0x800:
		return 2
	}
	return 3
}

// ErrStringTooLong is the error of Decode at a string past its maxString.
var ErrStringTooLong = errors.New("a JSON string is longer than the limit")
