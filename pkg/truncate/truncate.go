// Package truncate cuts messages to what the API server accepts where they
// are written, so that a long message (a template error, a webhook's answer,
// a list of reasons) never makes a write fail: the message lands, cut, with
// a visible marker. Display cuts what a page shows the same way.
package truncate

import (
	"strconv"
	"unicode/utf8"
)

// Limits of the places messages are written to, in bytes. A message that
// fits in that many bytes also fits in that many characters, so each limit
// holds whether the API server counts bytes or characters.
const (
	// Condition is the longest message of a metav1.Condition.
	Condition = 32 * 1024
	// EventNote is the longest note of an events.k8s.io Event.
	EventNote = 1024
	// InventoryMessage is the longest message of a ReleaseInventory status
	// entry (the CRD's maxLength).
	InventoryMessage = 1024
)

// String returns s when it is at most limit bytes long; else its beginning,
// cut between two characters (never inside one), followed by a marker that
// says how many bytes were cut, all in at most limit bytes. Invalid UTF-8 in
// s is kept as it is.
func String(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	marker := " …[" + strconv.Itoa(len(s)) + " bytes, truncated]"
	if limit <= len(marker) {
		return cut(s, limit)
	}
	return cut(s, limit-len(marker)) + marker
}

// Display is String for text shown to a person rather than written to the
// API server (the web view's values and objects): s when it is at most
// limit bytes long; else its beginning of at most limit bytes, cut between
// two characters, followed by a marker that says how many bytes s has past
// limit. The marker is not counted in limit.
func Display(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return cut(s, limit) + "… (" + strconv.Itoa(len(s)-limit) + " bytes more)"
}

// cut returns the longest beginning of s of at most n bytes that does not
// end inside a character.
func cut(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
