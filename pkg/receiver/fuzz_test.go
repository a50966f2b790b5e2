package receiver

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/klog/v2"

	"github.com/kumodo/convoy-apiserver/pkg/webhook"
)

// FuzzHandler sends the handler any body and headers, signed or not, to
// any path: no panic, no 5xx (the fakes never fail), an answer of the
// fixed ones.
func FuzzHandler(f *testing.F) {
	fixtures, err := filepath.Glob("../webhook/testdata/*.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range fixtures {
		body, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for i := range 4 {
			f.Add(uint8(i), true, "POST", "push", "id-1", "", int64(len(body)), body)
		}
	}
	f.Add(uint8(0), true, "POST", "push", "id-1", "", int64(-1), githubPush(appRepo, "refs/heads/main"))
	f.Add(uint8(0), false, "POST", "ping", "", "sha256=00", int64(-1), []byte(`{`))
	f.Add(uint8(1), true, "POST", "Push Hook", "x", "", int64(1<<40), []byte(`{"ref":"refs/heads/main"}`))
	f.Add(uint8(4), false, "GET", "", "", "", int64(0), []byte(nil))
	small := func(o *Options) { o.MaxBodyBytes = 4096 }
	paths := []string{pathGitHub, pathGitLab, pathHarbor, pathOther, "/hook/x", "/"}
	allowed := []int{http.StatusOK, http.StatusAccepted, http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound,
		http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge}
	f.Fuzz(func(t *testing.T, p uint8, sign bool, method, event, id, sig string, contentLength int64, body []byte) {
		// A Listener of its own: its dedup and buckets start empty, and
		// an input does what it did when minimized.
		e := newEnv(t, small)
		path := paths[int(p)%len(paths)]
		if !validMethod(method) {
			method = http.MethodPost
		}
		r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		r.Method = method
		r = r.WithContext(klog.NewContext(r.Context(), klog.Logger{})) // the zero Logger discards
		if contentLength >= -1 {
			r.ContentLength = contentLength
		}
		entry, known := testIndex()[path]
		for _, h := range []string{"X-GitHub-Event", "X-Gitlab-Event", "X-Gitea-Event", "X-Event-Key"} {
			r.Header.Set(h, event)
		}
		for _, h := range []string{"X-GitHub-Delivery", "X-Gitlab-Event-UUID", "X-Request-Id"} {
			r.Header.Set(h, id)
		}
		for _, typ := range webhook.Types {
			h, v := webhook.Sign(typ, body, secret)
			if !sign || !known || typ != entry.Type {
				v = sig
			}
			r.Header.Set(h, v)
		}
		w := e.do(r)
		if !slices.Contains(allowed, w.Code) {
			t.Fatalf("status %d: %q", w.Code, w.Body.String())
		}
		found := false
		for _, a := range answers {
			found = found || (a.status == w.Code && a.body == w.Body.String())
		}
		if !found || strings.Contains(w.Body.String(), "receiver") {
			t.Fatalf("answer %d %q", w.Code, w.Body.String())
		}
	})
}

// validMethod tells whether m is a token net/http would send.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range m {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", c) {
			return false
		}
	}
	return true
}
