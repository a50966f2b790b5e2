package redact

import "strings"

// URL returns rawURL without the user information of its
// authority, and whether it had one. It reads the text, so a URL that does
// not parse is redacted as well: the authority follows the first "//" up to
// the first "/", "?" or "#", and its user information is what comes before
// its last "@", as net/url reads them. Sources print their URLs in messages,
// Events and status: a password there must not be.
func URL(rawURL string) (string, bool) {
	_, rest, ok := strings.Cut(rawURL, "//")
	if !ok {
		return rawURL, false
	}
	start := len(rawURL) - len(rest)
	authority := rest
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		authority = rest[:end]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return rawURL, false
	}
	return rawURL[:start] + rest[at+1:], true
}
