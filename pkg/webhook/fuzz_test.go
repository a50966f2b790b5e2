package webhook

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds Verify and Parse any headers and body: no panic, a
// typed error, and what a Delivery keeps within its bounds.
func FuzzParse(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		body, err := os.ReadFile(filepath.Join("testdata", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		for i, typ := range Types {
			_, sig := Sign(typ, body, testSecret)
			f.Add(uint8(i), pushEvent(typ), "id-1", sig, body)
		}
	}
	f.Add(uint8(0), "ping", "", "sha256=00", []byte(`{"zen":"x"}`))
	f.Add(uint8(4), "diagnostics:ping", "x", "", []byte(`[`))
	f.Fuzz(func(t *testing.T, i uint8, event, id, sig string, body []byte) {
		typ := Types[int(i)%len(Types)]
		h := http.Header{}
		for _, name := range []string{"X-GitHub-Event", "X-Gitlab-Event", "X-Gitea-Event", "X-Forgejo-Event", "X-Event-Key"} {
			h.Set(name, event)
		}
		for _, name := range []string{"X-GitHub-Delivery", "X-Gitlab-Event-UUID", "X-Gitea-Delivery", "X-Forgejo-Delivery", "X-Request-Id"} {
			h.Set(name, id)
		}
		h.Set(schemes[typ].header, sig)
		if err := Verify(typ, h, body, testSecret); err != nil {
			var werr *Error
			if !errors.As(err, &werr) || werr.Kind == KindMalformedBody {
				t.Fatalf("Verify: %v", err)
			}
			if strings.Contains(err.Error(), string(testSecret)) {
				t.Fatalf("the secret in %q", err)
			}
		}
		d, err := Parse(typ, h, body)
		if err != nil {
			var werr *Error
			if !errors.As(err, &werr) || werr.Kind != KindMalformedBody {
				t.Fatalf("Parse: %v", err)
			}
			return
		}
		if d.Type != typ || len(d.Repositories) > MaxRepositories || len(d.Refs) > MaxRefs || len(d.Tags) > MaxRefs ||
			len(d.ID) > MaxIDLength || len(d.Event) > MaxEventLength {
			t.Fatalf("out of bounds: %+v", d)
		}
		for _, r := range d.Repositories {
			if r == "" || len(r) > MaxURLLength || !printable(r) {
				t.Fatalf("repository %q kept", r)
			}
			Matches(d, r, "")
		}
		for _, r := range d.Refs {
			if !strings.HasPrefix(r, "refs/") || len(r) > MaxRefLength || !printable(r) {
				t.Fatalf("ref %q kept", r)
			}
		}
		for _, tag := range d.Tags {
			if !ociTag.MatchString(tag) {
				t.Fatalf("tag %q kept", tag)
			}
		}
		if d.Ping && d.Refresh() {
			t.Fatalf("a ping to refresh: %+v", d)
		}
	})
}

// pushEvent is the event header's value of a push of typ.
func pushEvent(typ Type) string {
	switch typ {
	case GitLab:
		return "Push Hook"
	case BitbucketServer:
		return "repo:refs_changed"
	}
	return "push"
}

// FuzzNormalize: no panic, and a key is its own key.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"https://github.com/Acme/deploy.git", "git@github.com:Acme/deploy.git", "ssh://git@gitlab.example.com:2222/g/r.git",
		"oci://harbor.example.com/p/r", "harbor.example.com:8443/p/r", "[::1]:5000/p/r", "git@[::1]:org/repo",
		"https://h/a%25b", "https://h/a.git.git", "ssh://git@h:443/x", "h:22/x", "HTTPS://H/%41",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		key, ok := Normalize(raw)
		if !ok {
			if key != "" {
				t.Fatalf("Normalize(%q) = %q, false", raw, key)
			}
			return
		}
		again, ok := Normalize(key)
		if !ok || again != key {
			t.Fatalf("Normalize(%q) = %q, and Normalize(%q) = %q, %v", raw, key, key, again, ok)
		}
		if strings.Contains(key, "://") || strings.HasSuffix(key, "/") {
			t.Fatalf("Normalize(%q) = %q", raw, key)
		}
		d := Delivery{Type: Generic, Repositories: []string{raw}}
		if !Matches(d, key, "") || !Matches(d, raw, "") {
			t.Fatalf("a delivery of %q does not match %q", raw, key)
		}
	})
}
