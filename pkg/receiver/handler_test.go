package receiver

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kumodo/convoy-apiserver/pkg/webhook"
)

// assertAnswer checks the answer of o: its status, its fixed body, and
// that the body names no Receiver.
func assertAnswer(t *testing.T, w *httptest.ResponseRecorder, o outcome) {
	t.Helper()
	a := answers[o]
	assert.Equal(t, a.status, w.Code)
	assert.Equal(t, a.body, w.Body.String())
	assert.Equal(t, "text/plain; charset=utf-8", w.Header().Get("Content-Type"))
	for _, name := range []string{"receiver", "team-", "app", "s3cret", "uid-"} {
		assert.NotContains(t, w.Body.String(), name)
	}
}

// Each outcome: its status, its answer, its count, what was listed and
// refreshed.
func TestHandlerOutcomes(t *testing.T) {
	harborBody := []byte(`{"type":"PUSH_ARTIFACT","event_data":{"resources":[{"tag":"1.2.0","resource_url":"harbor.example.com/proj/chart:1.2.0"}],` +
		`"repository":{"repo_full_name":"proj/chart"}}}`)
	gitlabBody := []byte(`{"ref":"refs/heads/main","project":{"git_http_url":"https://github.com/org/app.git"}}`)
	cases := []struct {
		name      string
		req       func() *http.Request
		typ       string
		want      outcome
		lists     int
		refreshed []string
	}{
		{
			name: "a push of main refreshes the Releases of main, source or values source, of the Receiver's namespace",
			req:  func() *http.Request { return push("d-1") },
			typ:  "github", want: outcomeAccepted, lists: 1,
			refreshed: []string{"team-a/app-main by " + by("d-1"), "team-a/values-main by " + by("d-1")},
		},
		{
			name: "a push of another branch: listed, nothing refreshed",
			req:  func() *http.Request { return pushTo(pathGitHub, "d-2", appRepo, "refs/heads/feature") },
			typ:  "github", want: outcomeAccepted, lists: 1,
		},
		{
			name: "a valid signature for another repository: nothing refreshed",
			req: func() *http.Request {
				return pushTo(pathGitHub, "d-3", "https://github.com/evil/app", "refs/heads/main")
			},
			typ: "github", want: outcomeAccepted, lists: 1,
		},
		{
			name: "a Receiver of another namespace refreshes nothing of team-a",
			req:  func() *http.Request { return pushTo(pathOther, "d-4", appRepo, "refs/heads/main") },
			typ:  "github", want: outcomeAccepted, lists: 1,
		},
		{
			name: "spec.releases selects: only the web tier",
			req: func() *http.Request {
				return signed(pathGitLab, webhook.GitLab, "Push Hook", "g-1", gitlabBody, secret)
			},
			typ: "gitlab", want: outcomeAccepted, lists: 1,
			refreshed: []string{"team-a/app-main by receiver team-a/gl-receiver (gitlab delivery g-1)"},
		},
		{
			name: "an OCI tag refreshes the Release of that tag",
			req:  func() *http.Request { return signed(pathHarbor, webhook.Harbor, "", "h-1", harborBody, secret) },
			typ:  "harbor", want: outcomeAccepted, lists: 1,
			refreshed: []string{"team-b/chart by receiver team-b/harbor-receiver (harbor delivery h-1)"},
		},
		{
			name: "ping",
			req: func() *http.Request {
				return signed(pathGitHub, webhook.GitHub, "ping", "p-1", []byte(`{"zen":"x"}`), secret)
			},
			typ: "github", want: outcomePing,
		},
		{
			name: "an event not in spec.events",
			req: func() *http.Request {
				return signed(pathGitLab, webhook.GitLab, "Tag Push Hook", "g-2", gitlabBody, secret)
			},
			typ: "gitlab", want: outcomeIgnored,
		},
		{
			name: "an event of nothing to refresh",
			req: func() *http.Request {
				return signed(pathGitHub, webhook.GitHub, "issues", "d-5", []byte(`{}`), secret)
			},
			typ: "github", want: outcomeIgnored,
		},
		{
			name: "an unknown path",
			req:  func() *http.Request { return push("d-6-unused") },
			typ:  typeUnknown, want: outcomeUnknownPath,
		},
		{
			name: "GET",
			req:  func() *http.Request { return httptest.NewRequest(http.MethodGet, pathGitHub, nil) },
			typ:  typeUnknown, want: outcomeMethodNotAllowed,
		},
		{
			name: "a signature of another secret",
			req: func() *http.Request {
				return signed(pathGitHub, webhook.GitHub, "push", "d-7", githubPush(appRepo, "refs/heads/main"), []byte("other"))
			},
			typ: "github", want: outcomeUnauthorized,
		},
		{
			name: "a signed body that is not JSON",
			req: func() *http.Request {
				return signed(pathGitHub, webhook.GitHub, "push", "d-8", []byte(`{"ref":`), secret)
			},
			typ: "github", want: outcomeMalformed,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			r := c.req()
			if c.want == outcomeUnknownPath {
				r.URL.Path = "/hook/" + strings.Repeat("f", 64)
			}
			before := counted(t, c.typ, c.want)
			w := e.do(r)
			assertAnswer(t, w, c.want)
			assert.Equal(t, before+1, counted(t, c.typ, c.want))
			assert.Equal(t, c.lists, e.releases.listed())
			assert.ElementsMatch(t, c.refreshed, e.refresher.refreshed())
			if c.want == outcomeMethodNotAllowed {
				assert.Equal(t, http.MethodPost, w.Header().Get("Allow"))
			}
		})
	}
}

// Every signature error is a 401, before the Releases are listed.
func TestHandlerUnauthorized(t *testing.T) {
	body := githubPush(appRepo, "refs/heads/main")
	_, good := webhook.Sign(webhook.GitHub, body, secret)
	cases := map[string]func(r *http.Request){
		"missing":    func(r *http.Request) { r.Header.Del("X-Hub-Signature-256") },
		"empty":      func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", "") },
		"no prefix":  func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", strings.TrimPrefix(good, "sha256=")) },
		"sha1":       func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", "sha1="+strings.Repeat("0", 40)) },
		"not hex":    func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("z", 64)) },
		"sent twice": func(r *http.Request) { r.Header.Add("X-Hub-Signature-256", good) },
		"of another body": func(r *http.Request) {
			_, v := webhook.Sign(webhook.GitHub, []byte("{}"), secret)
			r.Header.Set("X-Hub-Signature-256", v)
		},
		"GitHub's old sha1":  func(r *http.Request) { r.Header.Del("X-Hub-Signature-256"); r.Header.Set("X-Hub-Signature", "sha1=00") },
		"the secret as text": func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", string(secret)) },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			r := push("u-1")
			mutate(r)
			assertAnswer(t, e.do(r), outcomeUnauthorized)
			assert.Zero(t, e.releases.listed())
			assert.Empty(t, e.refresher.refreshed())
		})
	}
	t.Run("a wrong token", func(t *testing.T) {
		e := newEnv(t, nil)
		r := signed(pathGitLab, webhook.GitLab, "Push Hook", "g-1", []byte(`{}`), []byte("s3cret-token-valuf"))
		assertAnswer(t, e.do(r), outcomeUnauthorized)
		assert.Zero(t, e.releases.listed())
	})
}

// countingReader yields n bytes of x (forever when n < 0), counting those
// read.
type countingReader struct {
	mu   sync.Mutex
	n    int64
	read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= 0 && c.read >= c.n {
		return 0, io.EOF
	}
	k := int64(len(p))
	if c.n >= 0 {
		k = min(k, c.n-c.read)
	}
	for i := range k {
		p[i] = 'x'
	}
	c.read += k
	return int(k), nil
}

// A body over the cap is refused: by its Content-Length without a byte
// read, and without one as soon as it is over.
func TestHandlerTooLarge(t *testing.T) {
	const max = 1024
	for name, declared := range map[string]int64{"Content-Length": 10 << 20, "chunked": -1} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.MaxBodyBytes = max })
			body := &countingReader{n: -1}
			r := httptest.NewRequest(http.MethodPost, pathGitHub, body)
			r.ContentLength = declared
			before := counted(t, "github", outcomeTooLarge)
			w := e.do(r)
			assertAnswer(t, w, outcomeTooLarge)
			assert.Equal(t, "close", w.Header().Get("Connection"))
			assert.Equal(t, before+1, counted(t, "github", outcomeTooLarge))
			if declared > 0 {
				assert.Zero(t, body.read)
			} else {
				assert.LessOrEqual(t, body.read, int64(max+1))
			}
			assert.Zero(t, e.releases.listed())
		})
	}
	t.Run("at the cap", func(t *testing.T) {
		e := newEnv(t, func(o *Options) { o.MaxBodyBytes = max })
		body := githubPush(appRepo, "refs/heads/main")
		body = append(body, bytes.Repeat([]byte(" "), max-len(body))...)
		r := signed(pathGitHub, webhook.GitHub, "push", "big", body, secret)
		r.ContentLength = -1
		assertAnswer(t, e.do(r), outcomeAccepted)
	})
}

// A delivery id seen is a replay: nothing refreshed again.
func TestHandlerDuplicate(t *testing.T) {
	e := newEnv(t, nil)
	assertAnswer(t, e.do(push("same")), outcomeAccepted)
	before := counted(t, "github", outcomeDuplicate)
	assertAnswer(t, e.do(push("same")), outcomeDuplicate)
	assert.Equal(t, before+1, counted(t, "github", outcomeDuplicate))
	assert.Len(t, e.refresher.refreshed(), 2)
	assert.Equal(t, 1, e.releases.listed())

	// Another Receiver may have the same id.
	assertAnswer(t, e.do(pushTo(pathOther, "same", appRepo, "refs/heads/main")), outcomeAccepted)
	// The window passed: handled again.
	e.clock.SetTime(e.clock.Now().Add(DefaultDedupWindow))
	assertAnswer(t, e.do(push("same")), outcomeAccepted)
	assert.Len(t, e.refresher.refreshed(), 4)
	// An unverified delivery does not enter it.
	bad := push("fresh")
	bad.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
	assertAnswer(t, e.do(bad), outcomeUnauthorized)
	assertAnswer(t, e.do(push("fresh")), outcomeAccepted)
}

// A failed list or refresh is a 500 that says nothing, and its delivery
// id is forgotten so that a redelivery is handled.
func TestHandlerError(t *testing.T) {
	e := newEnv(t, nil)
	e.releases.err = errors.New("etcd is on fire in team-a")
	before := counted(t, "github", outcomeError)
	assertAnswer(t, e.do(push("e-1")), outcomeError)
	assert.Equal(t, before+1, counted(t, "github", outcomeError))

	e.releases.err = nil
	e.refresher.err = errors.New("forbidden: gh-receiver")
	w := e.do(push("e-1"))
	assertAnswer(t, w, outcomeError)
	assert.NotContains(t, w.Body.String(), "forbidden")

	e.refresher.err = nil
	refreshedBefore := refreshCount(t, "github")
	assertAnswer(t, e.do(push("e-1")), outcomeAccepted)
	assert.Len(t, e.refresher.refreshed(), 2)
	assert.Equal(t, refreshedBefore+2, refreshCount(t, "github"))
}

// A panic is a 500, counted.
func TestHandlerPanic(t *testing.T) {
	e := newEnv(t, nil)
	e.refresher.panics = true
	before := counted(t, "github", outcomeError)
	assertAnswer(t, e.do(push("boom")), outcomeError)
	assert.Equal(t, before+1, counted(t, "github", outcomeError))
}

// A Receiver that exhausts its bucket is refused with Retry-After; the
// others are not.
func TestHandlerPerReceiverLimit(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.PerReceiverBurst, o.PerReceiverQPS = 2, 0.5 })
	assertAnswer(t, e.do(push("l-1")), outcomeAccepted)
	assertAnswer(t, e.do(push("l-2")), outcomeAccepted)
	before := counted(t, "github", outcomeRateLimited)
	w := e.do(push("l-3"))
	assertAnswer(t, w, outcomeRateLimited)
	assert.Equal(t, "2", w.Header().Get("Retry-After"))
	assert.Equal(t, before+1, counted(t, "github", outcomeRateLimited))
	assert.Equal(t, 2, e.releases.listed(), "a refused delivery lists nothing")

	gitlab := signed(pathGitLab, webhook.GitLab, "Push Hook", "g-1", []byte(`{"ref":"refs/heads/main","project":{"git_http_url":"https://github.com/org/app.git"}}`), secret)
	assertAnswer(t, e.do(gitlab), outcomeAccepted)

	e.clock.SetTime(e.clock.Now().Add(2 * 1e9))
	assertAnswer(t, e.do(push("l-4")), outcomeAccepted)
}

// The global bucket bounds all Receivers; the paths of none do not touch
// it.
func TestHandlerGlobalLimit(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Burst, o.QPS = 3, 0.001 })
	for range 1000 {
		r := push("flood")
		r.URL.Path = "/hook/" + strings.Repeat("e", 64)
		assertAnswer(t, e.do(r), outcomeUnknownPath)
	}
	assertAnswer(t, e.do(push("g-1")), outcomeAccepted)
	assertAnswer(t, e.do(pushTo(pathOther, "g-2", appRepo, "refs/heads/main")), outcomeAccepted)
	assertAnswer(t, e.do(push("g-3")), outcomeAccepted)
	w := e.do(pushTo(pathOther, "g-4", appRepo, "refs/heads/main"))
	assertAnswer(t, w, outcomeRateLimited)
	assert.NotEmpty(t, w.Header().Get("Retry-After"))

	// The refusal by the global bucket took no token of the Receiver's.
	l := e.l.limits.receiver("uid-other", e.clock.Now())
	assert.InDelta(t, float64(DefaultPerReceiverBurst-1), l.TokensAt(e.clock.Now()), 0.01)
}

// Past MaxInFlight deliveries being handled, 503.
func TestHandlerMaxInFlight(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxInFlight = 1 })
	e.refresher.entered, e.refresher.release = make(chan struct{}), make(chan struct{})
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- e.do(push("slow")) }()
	<-e.refresher.entered

	before := counted(t, "github", outcomeBusy)
	w := e.do(push("fast"))
	assertAnswer(t, w, outcomeBusy)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	assert.Equal(t, before+1, counted(t, "github", outcomeBusy))

	go func() {
		for range e.refresher.entered {
		}
	}()
	close(e.refresher.release)
	assertAnswer(t, <-done, outcomeAccepted)
	assertAnswer(t, e.do(push("after")), outcomeAccepted)
	close(e.refresher.entered)
}

// At most MaxRefreshesPerDelivery Releases are refreshed by one delivery.
func TestHandlerMaxRefreshes(t *testing.T) {
	e := newEnv(t, nil)
	many := e.releases.items[0]
	for i := range MaxRefreshesPerDelivery + 10 {
		r := many
		r.Name = "many-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		e.releases.items = append(e.releases.items, r)
	}
	assertAnswer(t, e.do(push("m-1")), outcomeAccepted)
	assert.Len(t, e.refresher.refreshed(), MaxRefreshesPerDelivery)
}
