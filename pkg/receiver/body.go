package receiver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// errTooLarge is a body longer than the cap.
var errTooLarge = errors.New("the body is larger than --receiver-max-body-bytes")

// minBodyBuffer is the first buffer of a body of unknown length.
const minBodyBuffer = 4 << 10

// readBody reads the body of r, at most max bytes: errTooLarge, without
// reading, when its Content-Length says more, and as soon as one byte
// more arrives when it does not say (chunked). The buffer is the declared
// length plus a byte, or, for a body of unknown length, grows by doubling
// up to max+1: it holds at most max+1 bytes, and under twice that for the
// moment of a copy.
func readBody(r *http.Request, max int64) ([]byte, error) {
	if r.ContentLength > max {
		return nil, errTooLarge
	}
	size := int64(minBodyBuffer)
	if r.ContentLength >= 0 {
		size = r.ContentLength
	}
	buf := make([]byte, 0, min(size, max)+1)
	limited := io.LimitReader(r.Body, max+1)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > max {
				return nil, errTooLarge
			}
			grown := make([]byte, len(buf), min(2*int64(cap(buf)), max+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := limited.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case errors.Is(err, io.EOF):
			if int64(len(buf)) > max {
				return nil, errTooLarge
			}
			return buf, nil
		case err != nil:
			return nil, fmt.Errorf("reading the body: %w", err)
		}
	}
}
