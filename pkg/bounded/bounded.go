// Package bounded reads no more than a limit: a Reader fails the read that
// passes it, and every read after, with the error its caller gives, so that
// what a tenant's server or archive sends is stopped at the first byte
// past a limit, whatever it claims.
package bounded

import "io"

// Reader reads r, failing past its limit.
type Reader struct {
	r        io.Reader
	left     int64
	tooLarge func() error
}

// NewReader returns a Reader of r that fails a read past limit bytes, and
// every read after, with tooLarge's error.
func NewReader(r io.Reader, limit int64, tooLarge func() error) *Reader {
	return &Reader{r: r, left: limit, tooLarge: tooLarge}
}

// Read reads at most one byte past the limit, to tell "at the limit" from
// "past it".
func (b *Reader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.tooLarge()
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, b.tooLarge()
	}
	return n, err
}

// Left is how many bytes may still be read (negative once past the limit).
func (b *Reader) Left() int64 { return b.left }

// ReadAll reads r to its end, failing past limit bytes with tooLarge's
// error.
func ReadAll(r io.Reader, limit int64, tooLarge func() error) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, tooLarge()
	}
	return data, nil
}
