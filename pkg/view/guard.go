package view

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// ContentSecurityPolicy is sent with every answer: the pages load their
// style sheet and icon from the view itself and nothing else; they run no
// script, and no other site may frame them.
const ContentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// secretDir is the first segment of every path of the view: the token is the
// second.
const secretDir = "/s/"

// NewToken returns a random token of 256 bits, URL-safe.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading random bytes for the token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Guard lets through only the requests of the holder of the token, sent to
// the address the view printed:
//   - the Host header must be Addr exactly, so that a page of another site
//     whose name resolves to 127.0.0.1 (DNS rebinding) is refused;
//   - every path starts with /s/TOKEN/ (compared in constant time): the
//     token is a capability of the path, not a cookie, which the browser
//     would send to every other server of 127.0.0.1 (cookies are per host,
//     not per port). The Guard strips the prefix and tells Next, whose
//     links carry it (BasePath);
//   - only GET and HEAD: nothing the view serves changes anything.
//
// Every answer, refusals included, carries the security headers; none sets
// a cookie.
type Guard struct {
	// Addr is the host:port the view listens on and printed.
	Addr  string
	Token string
	Next  http.Handler
}

// URL is the address to open: path (of the view, "/..."), under the
// token's prefix.
func (g *Guard) URL(path string) string {
	return (&url.URL{Scheme: "http", Host: g.Addr, Path: g.base() + path}).String()
}

// base is the prefix of every path of the view.
func (g *Guard) base() string { return secretDir + g.Token }

func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if r.Host != g.Addr {
		http.Error(w, fmt.Sprintf("forbidden: this view answers only as %s", g.Addr), http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: the view only reads", http.StatusMethodNotAllowed)
		return
	}
	// The escaped path, as ServeMux matches it: an escaped "/" in a name
	// stays one segment.
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), secretDir)
	if !ok {
		http.Error(w, "forbidden: no token; open the URL that kubectl convoy view printed", http.StatusForbidden)
		return
	}
	token, sub, slash := strings.Cut(rest, "/")
	if !g.valid(token) {
		http.Error(w, "forbidden: wrong token; open the URL that kubectl convoy view printed", http.StatusForbidden)
		return
	}
	sub = "/" + sub
	// The canonical path, redirected to here and not by ServeMux, which
	// knows no prefix: every Location stays under it.
	if clean := cleanPath(sub); !slash || clean != sub {
		// clean is escaped already: as it is, not escaped again.
		to := g.base() + clean
		if r.URL.RawQuery != "" {
			to += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	unescaped, err := url.PathUnescape(sub)
	if err != nil {
		http.Error(w, "bad request: the path is not escaped right", http.StatusBadRequest)
		return
	}
	r2 := r.WithContext(context.WithValue(r.Context(), baseKey{}, g.base()))
	u := *r.URL
	u.Path, u.RawPath = unescaped, sub
	r2.URL = &u
	g.Next.ServeHTTP(w, r2)
}

func (g *Guard) valid(token string) bool {
	return g.Token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(g.Token)) == 1
}

// cleanPath is path.Clean keeping a trailing slash, as ServeMux cleans.
func cleanPath(p string) string {
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean
}

// baseKey is the context key of the prefix the Guard stripped.
type baseKey struct{}

// BasePath is the prefix the Guard stripped from r's path ("/s/TOKEN"),
// which every link of a page must carry; without a Guard, "".
func BasePath(r *http.Request) string {
	base, _ := r.Context().Value(baseKey{}).(string)
	return base
}
