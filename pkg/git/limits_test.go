package git

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The counter counts pkt-lines, whatever the sizes of the reads: a flush,
// a delimiter and a response end count none; a length that is not a
// pkt-line's stops the counting (the decoder refuses it).
func TestRefCounter(t *testing.T) {
	pkt := func(payload string) string { return fmt.Sprintf("%04x%s", 4+len(payload), payload) }
	ref := pkt("0123456789abcdef0123456789abcdef01234567 refs/heads/main\n")
	service := pkt("# service=git-upload-pack\n") + "0000"
	for _, tc := range []struct {
		name       string
		input      string
		refs, more int
		fails      bool
	}{
		{"at the limit", strings.Repeat(ref, 5) + "0000", 5, 0, false},
		{"one past it", strings.Repeat(ref, 6) + "0000", 5, 0, true},
		{"smart HTTP's service line", service + strings.Repeat(ref, 5) + "0000", 5, 1, false},
		{"delimiters and ends count none", "0001" + "0002" + strings.Repeat(ref, 5) + "0000", 5, 0, false},
		{"not a length: left to the decoder", "zzzz" + strings.Repeat(ref, 50), 5, 0, false},
		{"a length below 4: left to the decoder", "0003" + strings.Repeat(ref, 50), 5, 0, false},
		{"no limit", strings.Repeat(ref, 50), 0, 0, false},
	} {
		for _, chunk := range []int{1, 3, 4096} {
			t.Run(fmt.Sprintf("%s, reads of %d", tc.name, chunk), func(t *testing.T) {
				out, err := io.ReadAll(refsCounted(iotestChunks(tc.input, chunk), "repo", tc.refs, tc.more))
				if tc.fails {
					assert.Equal(t, KindTooManyRefs, kindOf(err))
					assert.Less(t, len(out), len(tc.input), "stopped before the end")
					return
				}
				require.NoError(t, err)
				assert.Equal(t, tc.input, string(out))
			})
		}
	}
}

// iotestChunks reads s n bytes at a time at most.
func iotestChunks(s string, n int) io.Reader { return &chunks{s: s, n: n} }

type chunks struct {
	s string
	n int
}

func (c *chunks) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[k:]
	return k, nil
}

// kindOf is the Kind of err, 0 when it is not an *Error.
func kindOf(err error) Kind {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Kind
	}
	return 0
}

// FuzzRefCounter: any bytes read through the counter, in reads of any
// size, come out unchanged, or it fails with KindTooManyRefs after at most
// the bytes of the lines it allows; never a panic.
func FuzzRefCounter(f *testing.F) {
	f.Add([]byte("001e# service=git-upload-pack\n0000003d0123456789abcdef0123456789abcdef01234567 refs/heads/main\n0000"), uint8(1), uint8(7))
	f.Add([]byte("0004000400040004"), uint8(2), uint8(1))
	f.Add([]byte("fff0"), uint8(0), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, refs, chunk uint8) {
		out, err := io.ReadAll(refsCounted(iotestChunks(string(data), int(chunk)%64+1), "repo", int(refs), 0))
		if err != nil {
			require.Equal(t, KindTooManyRefs, kindOf(err), "%v", err)
			require.True(t, bytes.HasPrefix(data, out))
			return
		}
		require.Equal(t, data, out)
	})
}
