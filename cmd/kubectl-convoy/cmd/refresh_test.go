package cmd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// --wait waits for its own request: its value, or a later request's time
// that a pass could have written; never a value left in the future (an
// earlier observer copied any annotation into the status) or an older one.
func TestRefreshHandled(t *testing.T) {
	requested := time.Date(2026, 12, 6, 10, 0, 0, 100000000, time.UTC)
	now := requested.Add(3 * time.Second)
	for _, tc := range []struct {
		name, handled string
		want          bool
	}{
		{name: "its own value", handled: "2026-12-06T10:00:00.100000Z", want: true},
		{name: "nothing handled yet", handled: ""},
		{name: "an older request", handled: "2026-12-06T09:59:59Z"},
		{name: "a later request, handled", handled: "2026-12-06T10:00:02Z", want: true},
		{name: "its own time in another form", handled: "2026-12-06T10:00:00.1Z", want: true},
		{name: "a later request a replica a little ahead recorded", handled: "2026-12-06T10:00:40Z", want: true},
		{name: "far in the future", handled: "9999-12-31T00:00:00Z"},
		{name: "not a time", handled: "now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, refreshHandled(tc.handled, requested, now))
		})
	}
}
