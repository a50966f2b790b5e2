package jsonobjects

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Decode gives the objects of an array, stops at the first past
// maxObjects and at the first string past maxString, and refuses what is
// not an array of objects.
func TestDecode(t *testing.T) {
	errTooMany := errors.New("too many")
	tooMany := func() error { return errTooMany }
	for _, tc := range []struct {
		name, in   string
		maxString  int
		objects    int
		err        error
		errMessage string
	}{
		{name: "objects", in: `[{"kind": "A", "n": 1}, {"kind": "B"}]`, objects: 2},
		{name: "empty", in: ` [ ] `},
		{name: "at the limit", in: `[{}, {}, {}]`, objects: 3},
		{name: "past it", in: `[{}, {}, {}, {}]`, err: errTooMany},
		{name: "a long string", in: `[{"a": "abcde"}]`, maxString: 4, err: ErrStringTooLong},
		{name: "not an array", in: `{"kind": "A"}`, errMessage: "not a JSON array"},
		{name: "not an object", in: `[{}, 1]`, errMessage: "item 1 is not an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode(iotest.OneByteReader(strings.NewReader(tc.in)), 3, tc.maxString, tooMany)
			switch {
			case tc.err != nil:
				assert.ErrorIs(t, err, tc.err)
			case tc.errMessage != "":
				assert.ErrorContains(t, err, tc.errMessage)
			default:
				require.NoError(t, err)
				assert.Len(t, objs, tc.objects)
			}
		})
	}
	objs, err := Decode(strings.NewReader(`[{"n": 1, "f": 1.5}]`), 1, 0, tooMany)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"n": int64(1), "f": 1.5}, objs[0].Object, "integers stay int64, as the decoders of unstructured keep them")
}

// White space outside strings is cut to one space as an array is decoded;
// strings keep theirs, escaped quotes included.
func TestSquashSpace(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"[ \n\t {\"a\" :  1 } ,\n\n {} ]", `[ {"a" : 1 } , {} ]`},
		{`["a  b", "c\"  d",  "\\"  ]`, `["a  b", "c\"  d", "\\" ]`},
		{"[1 2]", "[1 2]"},
		{"", ""},
	} {
		out, err := io.ReadAll(&squashSpace{r: iotest.OneByteReader(strings.NewReader(tc.in))})
		require.NoError(t, err)
		assert.Equal(t, tc.want, string(out), "%q", tc.in)
	}
}

// A string is refused once it decodes to more than maxString bytes (an
// escape counts what it decodes to: \uXXXX its UTF-8 length), each string
// counted apart, keys too.
func TestSquashSpaceMaxString(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"at the limit", `["abcd"]`, true},
		{"past it", `["abcde"]`, false},
		{"each string apart", `["abcd", "efgh", {"ijkl": "mnop"}]`, true},
		{"a key past it", `[{"abcde": 1}]`, false},
		{"two-byte escapes count one", `["\\\"\n\t"]`, true},
		{"an escaped quote does not end it", `["ab\"cde"]`, false},
		{"an escaped < counts one", `["\u003c\u003c\u003c\u003c"]`, true},
		{"an escaped é counts two", `["\u00e9\u00E9"]`, true},
		{"an escaped € counts three", `["\u20aca"]`, true},
		{"past it with escapes", `["\u20ac\u00e9"]`, false},
		{"white space outside strings counts nothing", "[\"abcd\"          ,    \"abcd\"]", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := io.ReadAll(&squashSpace{r: iotest.OneByteReader(strings.NewReader(tc.in)), maxString: 4})
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrStringTooLong)
			}
		})
	}
}
