package view

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// ContentSecurityPolicy is sent with every answer: the pages load their
// style sheet and icon from the view itself and nothing else; they run no
// script, and no other site may frame them.
const ContentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// tokenParam is the query parameter that carries the token once, in the URL
// the command prints.
const tokenParam = "token"

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
//   - the token comes once as ?token= (it is then set as an HttpOnly,
//     SameSite=Strict cookie and the browser sent on without it, so that it
//     stays out of history and Referer headers), then as that cookie;
//   - only GET and HEAD: nothing the view serves changes anything.
//
// Every answer, refusals included, carries the security headers.
type Guard struct {
	// Addr is the host:port the view listens on and printed.
	Addr  string
	Token string
	Next  http.Handler
}

// CookieName is the cookie of the token. Browsers keep cookies per host,
// not per port: the port in the name keeps two views apart.
func (g *Guard) CookieName() string {
	_, port, err := net.SplitHostPort(g.Addr)
	if err != nil {
		port = "0"
	}
	return "convoy-view-" + port
}

// URL is the address to open: the view's root with the token.
func (g *Guard) URL(path string) string {
	return (&url.URL{Scheme: "http", Host: g.Addr, Path: path, RawQuery: url.Values{tokenParam: {g.Token}}.Encode()}).String()
}

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
	query := r.URL.Query()
	if token, ok := query[tokenParam]; ok {
		if len(token) != 1 || !g.valid(token[0]) {
			http.Error(w, "forbidden: wrong token; open the URL that kubectl convoy view printed", http.StatusForbidden)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: g.CookieName(), Value: g.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		query.Del(tokenParam)
		// The same page without the token; a path of "//host" would leave
		// the view.
		to := url.URL{Path: path.Clean("/" + strings.TrimLeft(r.URL.Path, "/")), RawQuery: query.Encode()}
		http.Redirect(w, r, to.String(), http.StatusSeeOther)
		return
	}
	c, err := r.Cookie(g.CookieName())
	if err != nil || !g.valid(c.Value) {
		http.Error(w, "forbidden: no token; open the URL that kubectl convoy view printed", http.StatusForbidden)
		return
	}
	g.Next.ServeHTTP(w, r)
}

func (g *Guard) valid(token string) bool {
	return g.Token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(g.Token)) == 1
}
