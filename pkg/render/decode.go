package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// decodeObjects decodes a JSON array of objects from r one object at a time,
// and stops with TooManyObjects at the first object past maxObjects, so that
// a render past the limit is never decoded whole (nor held twice, as JSON
// and as objects). what names the render in the message. An error of r is
// returned as it is.
func decodeObjects(r io.Reader, maxObjects int, what string) ([]*unstructured.Unstructured, error) {
	dec := json.NewDecoder(&squashSpace{r: r})
	if tok, err := dec.Token(); err != nil {
		return nil, err
	} else if tok != json.Delim('[') {
		return nil, fmt.Errorf("not a JSON array but %v", tok)
	}
	var objects []*unstructured.Unstructured
	for i := 0; dec.More(); i++ {
		if i == maxObjects {
			return nil, failure.New(ReasonTooManyObjects, nil, "%s holds more objects than the limit of %d (--max-render-objects)", what, maxObjects)
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
// it skips before a token, so a stored render of 300 MB of spaces between
// two objects would fill memory up to the limit of bytes (and twice that
// while the buffer grows); cut, it holds one byte. A run is kept as one space
// so that two tokens never run into one another.
type squashSpace struct {
	r        io.Reader
	inString bool
	escaped  bool
	space    bool // the last byte given was white space outside a string
}

func (s *squashSpace) Read(p []byte) (int, error) {
	for {
		n, err := s.r.Read(p)
		out := 0
		for _, c := range p[:n] {
			switch {
			case s.inString:
				switch {
				case s.escaped:
					s.escaped = false
				case c == '\\':
					s.escaped = true
				case c == '"':
					s.inString = false
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
				s.inString = true
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

// errInflatesTooFar is the error of a reader past its limit (limitReader).
var errInflatesTooFar = errors.New("the render inflates too far")

// limitReader reads from r and fails with errInflatesTooFar once more than
// n bytes were read.
type limitReader struct {
	r io.Reader
	n int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, errInflatesTooFar
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		return n, errInflatesTooFar
	}
	return n, err
}
