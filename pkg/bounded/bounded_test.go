package bounded

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errTooLarge = errors.New("too large")

func tooLarge() error { return errTooLarge }

func TestReader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		limit int64
		fails bool
	}{
		{"under", "abc", 4, false},
		{"at", "abcd", 4, false},
		{"one past", "abcde", 4, true},
		{"far past", strings.Repeat("x", 1<<20), 4, true},
		{"nothing allowed, nothing sent", "", 0, false},
	} {
		for _, oneByte := range []bool{false, true} {
			t.Run(tc.name, func(t *testing.T) {
				var r io.Reader = strings.NewReader(tc.input)
				if oneByte {
					r = iotest.OneByteReader(r)
				}
				b := NewReader(r, tc.limit, tooLarge)
				out, err := io.ReadAll(b)
				if tc.fails {
					require.ErrorIs(t, err, errTooLarge)
					assert.LessOrEqual(t, int64(len(out)), tc.limit+1, "one byte past the limit read at most")
					_, err = b.Read(make([]byte, 8))
					assert.ErrorIs(t, err, errTooLarge, "and every read after fails")
					return
				}
				require.NoError(t, err)
				assert.Equal(t, tc.input, string(out))
				assert.Equal(t, tc.limit-int64(len(tc.input)), b.Left())
			})
		}
	}
}

func TestReadAll(t *testing.T) {
	data, err := ReadAll(strings.NewReader("abcd"), 4, tooLarge)
	require.NoError(t, err)
	assert.Equal(t, "abcd", string(data))
	_, err = ReadAll(strings.NewReader("abcde"), 4, tooLarge)
	assert.ErrorIs(t, err, errTooLarge)
}
