package view

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// hostile is what the cluster may hold in any text: markup and quotes.
const hostile = `<script>alert("x")</script>'"><img src=x>`

var now = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// fakeReader answers from memory: the pages' logic, not the API's (that is
// test/e2e's).
type fakeReader struct {
	releases                               []convoyv1alpha1.Release
	diff                                   *subresourcesv1alpha1.ReleaseDiff
	health                                 *subresourcesv1alpha1.ReleaseHealth
	preview                                *subresourcesv1alpha1.ReleasePreview
	getErr, diffErr, healthErr, previewErr error
	calls                                  atomic.Int32
}

func (f *fakeReader) ListReleases(_ context.Context, namespace string) ([]convoyv1alpha1.Release, error) {
	f.calls.Add(1)
	var out []convoyv1alpha1.Release
	for _, r := range f.releases {
		if namespace == "" || r.Namespace == namespace {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeReader) GetRelease(_ context.Context, namespace, name string) (*convoyv1alpha1.Release, error) {
	f.calls.Add(1)
	if f.getErr != nil {
		return nil, f.getErr
	}
	for i := range f.releases {
		if f.releases[i].Namespace == namespace && f.releases[i].Name == name {
			return &f.releases[i], nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "convoy.kumodo.io", Resource: "releases"}, name)
}

func (f *fakeReader) Diff(context.Context, string, string) (*subresourcesv1alpha1.ReleaseDiff, error) {
	f.calls.Add(1)
	return f.diff, f.diffErr
}

func (f *fakeReader) Health(context.Context, string, string) (*subresourcesv1alpha1.ReleaseHealth, error) {
	f.calls.Add(1)
	return f.health, f.healthErr
}

func (f *fakeReader) Preview(context.Context, string, string) (*subresourcesv1alpha1.ReleasePreview, error) {
	f.calls.Add(1)
	return f.preview, f.previewErr
}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func release(namespace, name string, inSync, healthy metav1.ConditionStatus, at time.Time) convoyv1alpha1.Release {
	return convoyv1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 1},
		Spec:       convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: name + "-manifests"}}},
		Status: convoyv1alpha1.ReleaseStatus{
			Conditions: []metav1.Condition{
				{Type: convoyv1alpha1.ConditionInSync, Status: inSync, Reason: map[metav1.ConditionStatus]string{"True": "InSync", "False": "Drifted"}[inSync], ObservedGeneration: 1, Message: "message of " + name},
				{Type: convoyv1alpha1.ConditionHealthy, Status: healthy, Reason: map[metav1.ConditionStatus]string{"True": "Healthy", "False": "Degraded"}[healthy], ObservedGeneration: 1},
			},
			LastApplied:  &convoyv1alpha1.RenderRecord{RenderRef: "r-" + name, Time: metav1.NewTime(at)},
			LastResolved: &convoyv1alpha1.LastResolved{Kind: "GitRepository", URL: "https://git.example/" + name, Commit: fmt.Sprintf("%040x", at.Unix()), Time: metav1.NewTime(at)},
		},
	}
}

// hostileFixture is a Release whose every text from the cluster is hostile.
func hostileFixture() *fakeReader {
	r := release("shop", "web", metav1.ConditionFalse, metav1.ConditionFalse, now.Add(-time.Hour))
	r.Annotations = map[string]string{"note": hostile}
	r.Status.Conditions[0].Message = "InSync " + hostile
	r.Status.SelfHeal = &convoyv1alpha1.SelfHealStatus{
		Backoff:       &metav1.Duration{Duration: 4 * time.Minute},
		NextRequestAt: &metav1.Time{Time: now.Add(4 * time.Minute)},
		Contested:     []convoyv1alpha1.ContestedField{{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web", Path: "spec.replicas", Manager: "hpa" + hostile, Heals: 3, Since: metav1.NewTime(now.Add(-10 * time.Minute))}},
	}
	r.Spec.Pin = &convoyv1alpha1.Pin{RenderRef: "r-pinned"}
	at := metav1.NewTime(now.Add(-2 * time.Minute))
	return &fakeReader{
		releases: []convoyv1alpha1.Release{r},
		diff: &subresourcesv1alpha1.ReleaseDiff{
			RenderRef: "r-web", RenderSource: subresourcesv1alpha1.RenderSourceFresh, Result: subresourcesv1alpha1.DiffDrifted, Reason: "Drifted", Message: "diff " + hostile,
			Objects: []subresourcesv1alpha1.ObjectDiff{
				{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web", Status: subresourcesv1alpha1.ObjectModified,
					Changes: []subresourcesv1alpha1.FieldChange{
						{Path: "spec.replicas", Op: subresourcesv1alpha1.ChangeReplace, Desired: raw("2"), Live: raw("5"),
							Owners: []subresourcesv1alpha1.FieldOwner{{Manager: "kubectl" + hostile, Operation: "Update", Subresource: "scale", Time: &at}}},
						{Path: "spec.template.metadata.annotations.a", Op: subresourcesv1alpha1.ChangeReplace, Desired: raw(`"` + strings.ReplaceAll(hostile, `"`, `\"`) + `"`), Live: raw(`"b"`), Unattributed: subresourcesv1alpha1.UnattributedNoManager},
					},
					ChangedBy: []string{"kubectl (scale)"},
					Contested: []subresourcesv1alpha1.ContestedField{{Path: "spec.replicas", Manager: "hpa", Heals: 3, Since: metav1.NewTime(now.Add(-10 * time.Minute))}}},
				{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings", Status: subresourcesv1alpha1.ObjectInSync},
			},
			ExtraObjects: []subresourcesv1alpha1.ExtraObject{{ObjectKey: convoyv1alpha1.ObjectKey{Kind: "Service", Namespace: "shop", Name: "old"}, Version: "v1", RenderRef: "r-old"}},
		},
		health: &subresourcesv1alpha1.ReleaseHealth{
			Healthy:       &metav1.Condition{Type: "Healthy", Status: metav1.ConditionFalse, Reason: "Degraded", Message: "health " + hostile},
			HealthSummary: &convoyv1alpha1.HealthSummary{Total: 2, Healthy: 1, Degraded: 1},
			Entries: []subresourcesv1alpha1.EntryHealth{{ObjectKey: convoyv1alpha1.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"},
				State: convoyv1alpha1.HealthDegraded, Message: "entry " + hostile, FirstUnhealthy: &at, AssessedRenderRef: "r-web"}},
		},
		preview: &subresourcesv1alpha1.ReleasePreview{RenderRef: "r-web", RenderSource: subresourcesv1alpha1.RenderSourceFresh,
			Objects: []runtime.RawExtension{*raw(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"shop"},"data":{"x":"` + strings.ReplaceAll(hostile, `"`, `\"`) + `"}}`)}},
	}
}

const addr = "127.0.0.1:8765"

// base is the prefix of the view's paths with the token "t0ken".
const base = "/s/t0ken"

// serve runs the guarded view of f and returns a client of its paths, which
// prefixes them with the token.
func serve(t *testing.T, f *fakeReader, opts Options) (*Guard, func(path string) (*http.Response, string)) {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return now }
	}
	g := &Guard{Addr: addr, Token: "t0ken", Next: NewHandler(f, opts)}
	get := func(path string) (*http.Response, string) {
		req := httptest.NewRequest(http.MethodGet, "http://"+addr+base+path, nil)
		w := httptest.NewRecorder()
		g.ServeHTTP(w, req)
		body, err := io.ReadAll(w.Result().Body)
		require.NoError(t, err)
		return w.Result(), string(body)
	}
	return g, get
}

func TestGuard(t *testing.T) {
	g, _ := serve(t, hostileFixture(), Options{Namespace: "shop"})
	for _, tc := range []struct {
		name     string
		method   string
		host     string
		path     string
		want     int
		location string
		body     string
	}{
		{name: "the list, under the token's prefix", method: "GET", host: addr, path: "/s/t0ken/", want: 200, body: "<h1>Releases in shop</h1>"},
		{name: "a Release", method: "GET", host: addr, path: "/s/t0ken/namespaces/shop/releases/web", want: 200, body: "<h1>web</h1>"},
		{name: "HEAD", method: "HEAD", host: addr, path: "/s/t0ken/", want: 200},
		{name: "the prefix alone: on to its root", method: "GET", host: addr, path: "/s/t0ken?sort=name", want: 303, location: "/s/t0ken/?sort=name"},
		{name: "a path not clean: the clean one, under the prefix", method: "GET", host: addr, path: "/s/t0ken//evil.example/../static/view.css?x=1", want: 303, location: "/s/t0ken/static/view.css?x=1"},
		{name: "dot-dot cannot leave the prefix", method: "GET", host: addr, path: "/s/t0ken/../../evil", want: 303, location: "/s/t0ken/evil"},
		{name: "an escaped name stays escaped once in the redirect", method: "GET", host: addr, path: "/s/t0ken/namespaces/shop/releases/a%2Fb//", want: 303,
			location: "/s/t0ken/namespaces/shop/releases/a%2Fb/"},
		{name: "style sheet", method: "GET", host: addr, path: "/s/t0ken/static/view.css", want: 200},
		{name: "icon", method: "GET", host: addr, path: "/s/t0ken/static/favicon.svg", want: 200},
		{name: "favicon.ico", method: "GET", host: addr, path: "/s/t0ken/favicon.ico", want: 200},
		{name: "the assets' directory is no page (and no redirect out of the prefix)", method: "GET", host: addr, path: "/s/t0ken/static", want: 404},
		{name: "the assets' directory is not listed", method: "GET", host: addr, path: "/s/t0ken/static/", want: 404},
		{name: "style sheet without the token", method: "GET", host: addr, path: "/static/view.css", want: 403, body: "forbidden: no token"},
		{name: "icon without the token", method: "GET", host: addr, path: "/favicon.ico", want: 403, body: "forbidden: no token"},
		{name: "no token", method: "GET", host: addr, path: "/", want: 403, body: "forbidden: no token; open the URL that kubectl convoy view printed"},
		{name: "the token as a query parameter is no token", method: "GET", host: addr, path: "/?token=t0ken", want: 403, body: "forbidden: no token"},
		{name: "the token in another segment", method: "GET", host: addr, path: "/x/s/t0ken/", want: 403, body: "forbidden: no token"},
		{name: "wrong token", method: "GET", host: addr, path: "/s/nope/", want: 403, body: "forbidden: wrong token; open the URL that kubectl convoy view printed"},
		{name: "no token in the prefix", method: "GET", host: addr, path: "/s//", want: 403, body: "forbidden: wrong token"},
		{name: "a part of the token", method: "GET", host: addr, path: "/s/t0ke/", want: 403, body: "forbidden: wrong token"},
		{name: "the token and more", method: "GET", host: addr, path: "/s/t0ken0/", want: 403, body: "forbidden: wrong token"},
		{name: "the token escaped is another", method: "GET", host: addr, path: "/s/t0%6Ben/", want: 403, body: "forbidden: wrong token"},
		{name: "another Host (DNS rebinding)", method: "GET", host: "rebind.example:8765", path: "/s/t0ken/", want: 403, body: "this view answers only as 127.0.0.1:8765"},
		{name: "localhost is another Host", method: "GET", host: "localhost:8765", path: "/s/t0ken/", want: 403},
		{name: "POST", method: "POST", host: addr, path: "/s/t0ken/", want: 405},
		{name: "DELETE", method: "DELETE", host: addr, path: "/s/t0ken/namespaces/shop/releases/web", want: 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "http://"+addr+tc.path, nil)
			req.Host = tc.host
			w := httptest.NewRecorder()
			g.ServeHTTP(w, req)
			res := w.Result()
			assert.Equal(t, tc.want, res.StatusCode, w.Body.String())
			assert.Equal(t, ContentSecurityPolicy, res.Header.Get("Content-Security-Policy"))
			assert.Equal(t, "no-referrer", res.Header.Get("Referrer-Policy"))
			assert.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
			assert.Equal(t, "DENY", res.Header.Get("X-Frame-Options"))
			assert.Equal(t, "same-origin", res.Header.Get("Cross-Origin-Resource-Policy"))
			assert.Equal(t, "no-store", res.Header.Get("Cache-Control"))
			assert.Empty(t, res.Header.Values("Set-Cookie"), "no cookie, ever")
			assert.Equal(t, tc.location, res.Header.Get("Location"))
			assert.Contains(t, w.Body.String(), tc.body)
			if tc.want == 403 {
				assert.NotContains(t, w.Body.String(), "t0ken", "a refusal does not tell the token")
			}
		})
	}
	assert.Equal(t, "http://127.0.0.1:8765/s/t0ken/namespaces/a/releases/b", g.URL("/namespaces/a/releases/b"))
	assert.Equal(t, "http://127.0.0.1:8765/s/t0ken/", g.URL("/"))
	token, err := NewToken()
	require.NoError(t, err)
	assert.Regexp(t, `^[A-Za-z0-9_-]{43}$`, token, "256 bits, URL-safe: one path segment as it is")
}

// Every link of every page, the error pages' included, stays in the view
// under the token's prefix, or is a query of the same page: the pages link
// nowhere else.
func TestLinksCarryThePrefix(t *testing.T) {
	_, get := serve(t, hostileFixture(), Options{Namespace: "shop"})
	for _, path := range []string{"/", "/namespaces/shop/releases", "/namespaces/shop/releases/web", "/namespaces/shop/releases/web/preview", "/namespaces/shop/releases/nope", "/nope", "/namespaces/Shop/releases"} {
		t.Run(path, func(t *testing.T) {
			_, body := get(path)
			links := regexp.MustCompile(`(?:href|src|action)="([^"]*)"`).FindAllStringSubmatch(body, -1)
			require.NotEmpty(t, links)
			for _, l := range links {
				if l[1] == "" || strings.HasPrefix(l[1], "?") {
					continue
				}
				assert.True(t, strings.HasPrefix(l[1], base+"/"), "%s leaves the prefix", l[1])
			}
			assert.Contains(t, body, `<link rel="stylesheet" href="/s/t0ken/static/view.css">`)
			assert.Contains(t, body, `<link rel="icon" href="/s/t0ken/static/favicon.svg"`)
			assert.Contains(t, body, `<a class="brand" href="/s/t0ken/">`)
		})
	}
}

// The page that opens the view: 0600 in a directory of its own, 0700; it
// sends the browser on to the URL, and goes with its directory.
func TestWriteOpener(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	u := "http://127.0.0.1:8765/s/t0ken/namespaces/a/releases/b"
	path, remove, err := WriteOpener(u)
	require.NoError(t, err)
	assert.Equal(t, OpenerName, filepath.Base(path))
	assert.Equal(t, os.Getenv("TMPDIR"), filepath.Dir(filepath.Dir(path)))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	page, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(page), `<meta http-equiv="refresh" content="0;url=`+u+`">`)
	assert.Contains(t, string(page), `<a href="`+u+`">`)
	assert.Contains(t, string(page), `<meta name="referrer" content="no-referrer">`)
	require.NoError(t, remove())
	_, err = os.Stat(filepath.Dir(path))
	assert.True(t, os.IsNotExist(err), "the directory is gone: %v", err)
}

// Everything from the cluster is escaped on every page: no markup of it
// survives, its text does.
func TestPagesEscapeTheCluster(t *testing.T) {
	_, get := serve(t, hostileFixture(), Options{Namespace: "shop"})
	for _, path := range []string{"/", "/namespaces/shop/releases", "/namespaces/shop/releases/web", "/namespaces/shop/releases/web/preview"} {
		t.Run(path, func(t *testing.T) {
			res, body := get(path)
			require.Equal(t, 200, res.StatusCode, body)
			assert.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
			assert.NotContains(t, body, "<script")
			assert.NotContains(t, body, "<img")
			assert.Contains(t, body, "&lt;script&gt;alert(")
			assert.NotRegexp(t, `\son[a-z]+=`, body, "no event handler attribute")
		})
	}
}

func TestReleasePage(t *testing.T) {
	_, get := serve(t, hostileFixture(), Options{Namespace: "shop"})
	res, body := get("/namespaces/shop/releases/web")
	require.Equal(t, 200, res.StatusCode, body)
	for _, want := range []string{
		`<code class="path">spec.replicas</code>`, // the changed field
		`<pre class="desired">2</pre>`,            // side by side
		`<pre class="live">5</pre>`,               //
		`<span class="manager">kubectl&lt;script`, // its manager
		`(scale)</span> <span class="operation">Update</span> <time datetime="2026-12-04T11:58:00Z"`,
		`no manager but convoy&#39;s owns it`,       // a change nobody owns
		`<span class="badge warn">contested</span>`, // self-heal fights another manager
		`taken back by hpa 3 times`,                 //
		`<dt>Backoff</dt><dd>4m0s</dd>`,             // the self-heal backoff
		`Service shop/old`,                          // the next sync would prune it
		`entry &lt;script&gt;`,                      // an object's health message
		`<code>r-pinned</code>`,                     // the pin
		`1 objects in sync`,                         // in-sync objects collapse
		`href="/s/t0ken/namespaces/shop/releases/web/preview"`,
	} {
		assert.Contains(t, body, want)
	}
	assert.Regexp(t, `<details class="object drifted" open>\s*<summary><span class="badge bad">Modified</span> Deployment.apps shop/web`, body)
}

// What the user may not read is said in its section; the rest of the page
// is there.
func TestReleasePageWithoutRights(t *testing.T) {
	f := hostileFixture()
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "subresources.convoy.kumodo.io", Resource: "releases/diff"}, "web", fmt.Errorf("no"))
	f.diffErr, f.healthErr = forbidden, fmt.Errorf("health down")
	_, get := serve(t, f, Options{Namespace: "shop"})
	res, body := get("/namespaces/shop/releases/web")
	require.Equal(t, 200, res.StatusCode)
	assert.Contains(t, body, "Could not read the diff: releases/diff.subresources.convoy.kumodo.io &#34;web&#34; is forbidden")
	assert.Contains(t, body, "Could not read the health: health down")
	assert.Contains(t, body, "<h2>Conditions</h2>")

	f.previewErr = forbidden
	res, body = get("/namespaces/shop/releases/web/preview")
	assert.Equal(t, 403, res.StatusCode)
	assert.Contains(t, body, "Could not read the preview")

	res, _ = get("/namespaces/shop/releases/nope")
	assert.Equal(t, 404, res.StatusCode)
	f.getErr = context.DeadlineExceeded
	res, _ = get("/namespaces/shop/releases/web")
	assert.Equal(t, 504, res.StatusCode)
}

// A malformed name is refused before anything is read.
func TestBadPaths(t *testing.T) {
	f := hostileFixture()
	_, get := serve(t, f, Options{Namespace: "shop"})
	for _, path := range []string{"/namespaces/Shop/releases", "/namespaces/shop/releases/a%2Fb", "/namespaces/shop/releases/a..b/preview", "/namespaces/shop/releases/" + strings.Repeat("a", 300)} {
		res, body := get(path)
		assert.Equal(t, 400, res.StatusCode, path)
		assert.Contains(t, body, "not a valid name")
	}
	res, _ := get("/nope")
	assert.Equal(t, 404, res.StatusCode)
	assert.Zero(t, f.calls.Load())
}

func TestListFilterAndSort(t *testing.T) {
	f := &fakeReader{releases: []convoyv1alpha1.Release{
		release("a", "web", metav1.ConditionTrue, metav1.ConditionTrue, now.Add(-3*time.Hour)),
		release("a", "api", metav1.ConditionFalse, metav1.ConditionTrue, now.Add(-1*time.Hour)),
		release("a", "db", metav1.ConditionTrue, metav1.ConditionFalse, now.Add(-2*time.Hour)),
		release("b", "cache", metav1.ConditionTrue, metav1.ConditionTrue, now),
	}}
	names := func(body string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`<a class="release" href="[^"]*">([^<]*)</a>`).FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	_, get := serve(t, f, Options{Namespace: "a"})
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{"api", "db", "web"}},
		{"?sort=-name", []string{"web", "db", "api"}},
		{"?sort=insync", []string{"api", "db", "web"}},
		{"?sort=healthy", []string{"db", "api", "web"}},
		{"?sort=synced", []string{"web", "db", "api"}},
		{"?sort=-synced", []string{"api", "db", "web"}},
		{"?sort=bogus", []string{"api", "db", "web"}},
		{"?state=drifted", []string{"api"}},
		{"?state=unhealthy", []string{"db"}},
		{"?state=attention&sort=-name", []string{"db", "api"}},
		{"?q=DB", []string{"db"}},
		{"?q=message+of+w", []string{}},
		{"?q=drifted", []string{"api"}},
	} {
		res, body := get("/" + tc.query)
		require.Equal(t, 200, res.StatusCode)
		assert.Equal(t, tc.want, append([]string{}, names(body)...), tc.query)
	}
	// Every namespace: the column is there, the rows of both.
	_, get = serve(t, f, Options{AllNamespaces: true})
	_, body := get("/?sort=-namespace")
	assert.Equal(t, []string{"cache", "web", "db", "api"}, names(body))
	assert.Contains(t, body, `<a href="?sort=namespace">Namespace</a> <span class="arrow">▼</span>`)
	assert.Contains(t, body, "4 of 4 Releases")
	_, body = get("/")
	assert.Equal(t, []string{"api", "db", "web", "cache"}, names(body), "by namespace, then name")
	_, body = get("/?sort=-synced&q=a")
	assert.Contains(t, body, `<input type="hidden" name="sort" value="-synced">`, "the filter keeps the order")
	// The namespace in the path.
	_, body = get("/namespaces/b/releases")
	assert.Equal(t, []string{"cache"}, names(body))
}

func TestCut(t *testing.T) {
	long := strings.Repeat("x", maxValue*2)
	assert.Len(t, value(raw(`"`+long+`"`)), maxValue+len(fmt.Sprintf("… (%d bytes more)", maxValue+2)))
	assert.Equal(t, "(absent)", value(nil))
	assert.Equal(t, "{\n  \"a\": 1\n}", value(raw(`{"a":1}`)))
	assert.Equal(t, `"<b>&"`, value(raw(`"\u003cb\u003e\u0026"`)), "as the text it is; the template escapes it")
	assert.Equal(t, "12345678901234567890", value(raw(`12345678901234567890`)), "numbers as written")
}

// BenchmarkListPage renders the list of 1,000 Releases from memory: the
// view's own part of the list page (test/e2e's BenchmarkViewList adds the
// API's).
func BenchmarkListPage(b *testing.B) {
	f := &fakeReader{}
	for i := range 1000 {
		f.releases = append(f.releases, release("shop", fmt.Sprintf("app-%04d", i), metav1.ConditionTrue, metav1.ConditionTrue, now.Add(-time.Duration(i)*time.Minute)))
	}
	g := &Guard{Addr: addr, Token: "t0ken", Next: NewHandler(f, Options{Namespace: "shop"})}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "http://"+addr+base+"/?sort=-synced", nil)
		w := httptest.NewRecorder()
		g.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

// A long diff collapses by object and is cut at maxChanges per object.
func TestLongDiffCollapses(t *testing.T) {
	f := hostileFixture()
	var many []subresourcesv1alpha1.FieldChange
	for i := range maxChanges + 50 {
		many = append(many, subresourcesv1alpha1.FieldChange{Path: fmt.Sprintf("data.k%03d", i), Op: subresourcesv1alpha1.ChangeAdd, Desired: raw(`"v"`)})
	}
	objects := []subresourcesv1alpha1.ObjectDiff{{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "big", Status: subresourcesv1alpha1.ObjectModified, Changes: many}}
	for i := range openObjects + 1 {
		objects = append(objects, subresourcesv1alpha1.ObjectDiff{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: fmt.Sprintf("small-%d", i), Status: subresourcesv1alpha1.ObjectMissing})
	}
	f.diff.Objects = objects
	_, get := serve(t, f, Options{Namespace: "shop"})
	res, body := get("/namespaces/shop/releases/web")
	require.Equal(t, 200, res.StatusCode)
	assert.Equal(t, maxChanges, strings.Count(body, `<tr class="change`), "changes shown")
	assert.Contains(t, body, "50 more changes not shown")
	assert.Regexp(t, `<details class="object drifted">\s*<summary><span class="badge bad">Modified</span> ConfigMap shop/big`, body, "more than openChanges: collapsed")
	assert.Equal(t, openObjects-1, strings.Count(body, `<details class="object drifted" open>`), "the first small ones open, up to openObjects in all")
	assert.Regexp(t, `<details class="object drifted">\s*<summary><span class="badge bad">Missing</span> ConfigMap shop/small-5`, body)
}

// FuzzRequest: whatever the path and query, the view answers one of its
// statuses, never panics, sets no cookie, shows a page only under the
// token's prefix, redirects only to there, and no markup of the request
// comes back.
func FuzzRequest(f *testing.F) {
	f.Add("/s/t0ken/", "sort=-synced&q=web&state=attention")
	f.Add("/s/t0ken/namespaces/shop/releases/web", "")
	f.Add("/s/t0ken/namespaces/shop/releases/web/preview", "token=t0ken")
	f.Add("/s/t0ken/namespaces/<b>/releases", "q=<script>")
	f.Add("/s/t0ken//x/../static/view.css", "sort=%00")
	f.Add("/s/t0ken/static/index.html", "")
	f.Add("/s/t0ken", "")
	f.Add("/s/t0ke/", "")
	f.Add("/namespaces/shop/releases/web", "token=t0ken")
	f.Add("//s/t0ken/", "")
	fixture := hostileFixture()
	g := &Guard{Addr: addr, Token: "t0ken", Next: NewHandler(fixture, Options{Namespace: "shop", Now: func() time.Time { return now }})}
	view, err := url.Parse("http://" + addr + base + "/")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path, query string) {
		u, err := url.Parse("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		u.Path, u.RawQuery = path, query
		req, err := http.NewRequest(http.MethodGet, u.String(), nil)
		if err != nil {
			return
		}
		w := httptest.NewRecorder()
		g.ServeHTTP(w, req)
		switch w.Code {
		case 200, 301, 303, 400, 403, 404:
		default:
			t.Fatalf("%s: HTTP %d", u, w.Code)
		}
		if w.Code == 200 && !strings.HasPrefix(req.URL.EscapedPath(), base+"/") {
			t.Fatalf("%s: a page outside the token's prefix", u)
		}
		if body := w.Body.String(); strings.Contains(body, "<script") || strings.Contains(body, "<b>") {
			t.Fatalf("%s: markup of the request in the answer", u)
		}
		if c := w.Header().Values("Set-Cookie"); len(c) > 0 {
			t.Fatalf("%s: a cookie: %v", u, c)
		}
		if loc := w.Header().Get("Location"); loc != "" {
			to, err := req.URL.Parse(loc)
			if err != nil {
				t.Fatalf("%s: redirect to %q: %v", u, loc, err)
			}
			if to.Scheme != view.Scheme || to.Host != view.Host || !strings.HasPrefix(to.EscapedPath(), view.EscapedPath()) {
				t.Fatalf("%s: redirect out of the view: %s", u, loc)
			}
		}
	})
}

// The signature the source was verified with is on the Release page and
// its preview: the signer, the key of the Secret, the fingerprint and key
// id, the layout, and for a Git source verified in mode TagAndHEAD the
// tag's signature after the commit's; a user id is escaped.
func TestSignedSource(t *testing.T) {
	const fpr = "4F1A9C3E5B7D2A6E8C0B1D3F5A7C9E2B4D6F8A0C"
	sig := func(layout string) *subresourcesv1alpha1.SourceSignature {
		return &subresourcesv1alpha1.SourceSignature{Provider: "git", Format: "openpgp", Key: "release.asc", Fingerprint: fpr, KeyID: "8C0B1D3F5A7C9E2B", Identity: "Jane <jane@example.com>", Layout: layout}
	}
	for _, tc := range []struct {
		name string
		src  *subresourcesv1alpha1.ResolvedSource
		want []string
	}{
		{"git commit over SSH", &subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://git.example/apps", Ref: "refs/heads/main", Commit: strings.Repeat("a", 40),
			Verified: &subresourcesv1alpha1.SourceSignature{Provider: "git", Format: "ssh", Key: "allowed_signers", Fingerprint: "SHA256:uN8mYz3V5qk2b7d6Zr0cXl9wQe1tPa4sHj8fGi2oKmE", Identity: "ci@example.com", Layout: "commit"}},
			[]string{"signed: git ssh key allowed_signers by ci@example.com (SHA256:uN8mYz3V5qk2b7d6Zr0cXl9wQe1tPa4sHj8fGi2oKmE, commit)"}},
		{"git TagAndHEAD", &subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://git.example/apps", Ref: "refs/tags/v1.2.0", Commit: strings.Repeat("a", 40), Verified: sig("commit"), VerifiedTag: sig("tag")},
			[]string{"signed: git openpgp key release.asc by Jane &lt;jane@example.com&gt; (" + fpr + ", key id 8C0B1D3F5A7C9E2B, commit), tag signed: git openpgp key release.asc by Jane &lt;jane@example.com&gt; (" + fpr + ", key id 8C0B1D3F5A7C9E2B, tag)"}},
		{"helm provenance", &subresourcesv1alpha1.ResolvedSource{Kind: "HelmRepository", URL: "https://charts.example", Chart: "web", Version: "1.2.3", Digest: "sha256:00",
			Verified: &subresourcesv1alpha1.SourceSignature{Provider: "helm", Format: "openpgp", Key: "charts.asc", Fingerprint: fpr, KeyID: "8C0B1D3F5A7C9E2B", Identity: "Charts", Layout: "prov"}},
			[]string{"web 1.2.3 (sha256:00), signed: helm openpgp key charts.asc by Charts (" + fpr + ", key id 8C0B1D3F5A7C9E2B, prov)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := hostileFixture()
			f.diff.ResolvedSource, f.preview.ResolvedSource = tc.src, tc.src
			_, get := serve(t, f, Options{Namespace: "shop"})
			for _, path := range []string{"/namespaces/shop/releases/web", "/namespaces/shop/releases/web/preview"} {
				res, body := get(path)
				require.Equal(t, 200, res.StatusCode, body)
				for _, want := range tc.want {
					assert.Contains(t, body, want, path)
				}
			}
		})
	}
}

// The revision of the values source is on the Release page (the one the
// drift loop last resolved, and the one the diff's render read) and on its
// preview, beside the source's, escaped; nothing is said of a Release
// without one.
func TestValuesSource(t *testing.T) {
	commit := strings.Repeat("b", 40)
	chart := &subresourcesv1alpha1.ResolvedSource{Kind: "OCIRepository", URL: "oci://r/web", Tag: "v1", Digest: "sha256:00"}
	// The drift loop last resolved the values source to the same revision
	// five minutes ago.
	lastOf := func(r *subresourcesv1alpha1.ResolvedSource) *convoyv1alpha1.LastResolved {
		if r == nil {
			return nil
		}
		return &convoyv1alpha1.LastResolved{Kind: r.Kind, URL: r.URL, Tag: r.Tag, Ref: r.Ref, Commit: r.Commit, Digest: r.Digest, Time: metav1.NewTime(now.Add(-5 * time.Minute))}
	}
	for _, tc := range []struct {
		name   string
		values *subresourcesv1alpha1.ResolvedSource
		// line and lastLine are how values reads in the diff and the
		// preview, and as status.lastResolvedValuesSource.
		line, lastLine string
	}{
		{name: "none"},
		{name: "git",
			values:   &subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://git.example/values", Ref: "refs/heads/main", Commit: commit},
			line:     "https://git.example/values refs/heads/main (commit " + commit + ")",
			lastLine: "https://git.example/values refs/heads/main (commit " + commit + "), since 2026-12-04T11:55:00Z"},
		{name: "OCI bundle, signed",
			values: &subresourcesv1alpha1.ResolvedSource{Kind: "OCIRepository", URL: "oci://r/values", Tag: "prod", Digest: "sha256:11",
				Verified: &subresourcesv1alpha1.SourceSignature{Provider: "cosign", Subject: "ci@example.com", Issuer: "https://issuer.example", Layout: "referrer"}},
			line:     "oci://r/values:prod (sha256:11), signed: cosign keyless by ci@example.com of issuer https://issuer.example (referrer)",
			lastLine: "oci://r/values:prod (sha256:11), since 2026-12-04T11:55:00Z"},
		{name: "hostile",
			values: &subresourcesv1alpha1.ResolvedSource{Kind: "GitRepository", URL: "https://git.example/values", Ref: hostile, Commit: commit,
				Verified: &subresourcesv1alpha1.SourceSignature{Provider: "git", Format: "openpgp", Identity: hostile, Layout: "commit"}},
			line:     "https://git.example/values &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&#39;&#34;&gt;&lt;img src=x&gt; (commit " + commit + "), signed: git openpgp by &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&#39;&#34;&gt;&lt;img src=x&gt; (commit)",
			lastLine: "https://git.example/values &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&#39;&#34;&gt;&lt;img src=x&gt; (commit " + commit + "), since 2026-12-04T11:55:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := hostileFixture()
			f.releases[0].Status.LastResolvedValuesSource = lastOf(tc.values)
			f.diff.ResolvedSource, f.preview.ResolvedSource = chart, chart
			f.diff.ResolvedValuesSource, f.preview.ResolvedValuesSource = tc.values, tc.values
			_, get := serve(t, f, Options{Namespace: "shop"})

			res, body := get("/namespaces/shop/releases/web")
			require.Equal(t, 200, res.StatusCode, body)
			res, preview := get("/namespaces/shop/releases/web/preview")
			require.Equal(t, 200, res.StatusCode, preview)
			if tc.line == "" {
				assert.NotContains(t, body, "Last resolved values")
				assert.Contains(t, body, "render <code>r-web (Fresh)</code> from oci://r/web:v1 (sha256:00)</p>")
				assert.Contains(t, preview, "<dt>Resolved source</dt><dd>oci://r/web:v1 (sha256:00)</dd></dl>")
				return
			}
			assert.Contains(t, body, `<dt>Last resolved values</dt><dd>`+tc.lastLine+` (<time datetime="2026-12-04T11:55:00Z"`)
			assert.Contains(t, body, "render <code>r-web (Fresh)</code> from oci://r/web:v1 (sha256:00), values from "+tc.line+"</p>")
			assert.Contains(t, preview, "<dt>Resolved source</dt><dd>oci://r/web:v1 (sha256:00)</dd><dt>Values source</dt><dd>"+tc.line+"</dd></dl>")
			for _, page := range []string{body, preview} {
				assert.NotContains(t, page, "<script")
				assert.NotContains(t, page, "<img")
			}
		})
	}
}
