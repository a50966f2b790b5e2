package truncate

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestString(t *testing.T) {
	cases := []struct {
		name  string
		s     string
		limit int
		want  string
	}{
		{name: "fits", s: "short", limit: 10, want: "short"},
		{name: "exactly", s: "0123456789", limit: 10, want: "0123456789"},
		{name: "cut with a marker", s: strings.Repeat("a", 100), limit: 40, want: strings.Repeat("a", 14) + " …[100 bytes, truncated]"},
		{name: "never inside a character", s: strings.Repeat("é", 50), limit: 40, want: strings.Repeat("é", 7) + " …[100 bytes, truncated]"},
		{name: "a limit shorter than the marker", s: strings.Repeat("日", 10), limit: 7, want: "日日"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := String(tc.s, tc.limit)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len(got), tc.limit)
			assert.True(t, utf8.ValidString(got))
		})
	}
}

// Display keeps what it shows within the limit, says how many bytes were
// past it, and never shows half a character.
func TestDisplay(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{s: "ab", want: "ab"},
		{s: "abcd", want: "ab… (2 bytes more)"},
		{s: "é€", want: "é… (3 bytes more)"},
		{s: "日本", want: "… (4 bytes more)"},
	} {
		got := Display(tc.s, 2)
		assert.Equal(t, tc.want, got, tc.s)
		assert.True(t, utf8.ValidString(got), tc.s)
	}
}

func FuzzString(f *testing.F) {
	f.Add("héllo wörld", 5)
	f.Add(strings.Repeat("日本", 100), 1024)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if limit < 0 || limit > 1<<20 {
			return
		}
		got := String(s, limit)
		if len(got) > limit && len(s) > limit {
			t.Fatalf("String(%q, %d) = %q: %d bytes", s, limit, got, len(got))
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("String(%q, %d) = %q splits a character", s, limit, got)
		}
	})
}
