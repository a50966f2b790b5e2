//go:build unix

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// chromium finds Debian's Chromium. Missing, the test fails under CI=true
// (hack/setup.sh installs it there) and is skipped elsewhere, saying why.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		require.FailNow(t, "no chromium on PATH: hack/setup.sh installs Debian's chromium (make setup)")
	}
	t.Skip("no chromium on PATH: install Debian's chromium (make setup, as root) to run the browser test")
	return ""
}

// pageProblems collects what a page must not have: console errors and
// warnings, uncaught exceptions, log entries of errors (a refused resource
// or a Content-Security-Policy violation is one), failed or blocked loads,
// and answers of 400 or more.
type pageProblems struct {
	mu   sync.Mutex
	list []string
}

func (p *pageProblems) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

func (p *pageProblems) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.list...)
}

func (p *pageProblems) listen(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value))
			}
			p.add("console %s: %s", ev.Type, strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		p.add("exception: %s", ev.ExceptionDetails.Text)
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
			p.add("log %s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
		}
	case *network.EventLoadingFailed:
		p.add("load failed: %s (blocked: %s)", ev.ErrorText, ev.BlockedReason)
	case *network.EventResponseReceived:
		if ev.Response.Status >= 400 {
			p.add("HTTP %d for %s", ev.Response.Status, ev.Response.URL)
		}
	}
}

// recordingServer is an HTTP server of 127.0.0.1 that keeps the URL and
// headers of every request it gets.
type recordingServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recordedRequest
}

type recordedRequest struct {
	uri    string
	header http.Header
}

func newRecordingServer(t *testing.T) *recordingServer {
	t.Helper()
	s := &recordingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, recordedRequest{uri: r.RequestURI, header: r.Header.Clone()})
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!DOCTYPE html><html lang="en"><head><title>other</title><link rel="icon" href="data:,"></head><body><p id="other">another server</p></body></html>`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *recordingServer) all() []recordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recordedRequest(nil), s.requests...)
}

// The view in headless Chromium, as a user opens it: through the page that
// kubectl convoy view gives xdg-open (a fake one, which logs its command
// line: the token is not on it), the list, a click into the drifted Release,
// the changed field and its manager; nothing on the way may log an error or
// be blocked. Then another server of 127.0.0.1 receives no cookie and no
// token from the browser. The screenshots it takes are docs/users/view.md's
// (CONVOY_VIEW_SCREENSHOTS=docs/users/img writes them there).
func TestViewBrowser(t *testing.T) {
	// Not parallel: it runs Chromium.
	exe := chromium(t)
	ns := viewFixture(t)
	// Two more Releases for the list: one in sync, one never applied.
	for _, name := range []string{"api", "cache"} {
		newDriftRelease(t, ns, name, map[string]string{"config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "-config}\ndata: {a: b}\n"})
	}
	newStandIn(t).apply(ns, "api")
	waitInSync(t, ns, "api", metav1.ConditionTrue, "InSync")
	eventually(t, "an InSync condition on cache", func(ctx context.Context) error {
		r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(ctx, "cache", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(r.Status.Conditions) == 0 {
			return fmt.Errorf("no condition yet")
		}
		return nil
	})
	// Another server of 127.0.0.1, on another port, as a user has them (a
	// dev server, a notebook): it must never receive the view's token.
	other := newRecordingServer(t)
	v := startViewOpening(t, "", "-n", ns)

	// (a) The opener's command line, which every user of the machine may
	// read in /proc, holds a file, not the token.
	var opened []string
	eventually(t, "kubectl convoy view ran xdg-open", func(context.Context) error {
		log, err := os.ReadFile(v.openLog)
		if err != nil {
			return err
		}
		opened = strings.Split(strings.TrimSuffix(string(log), "\n"), "\n")
		return nil
	})
	assert.NotContains(t, strings.Join(opened, "\n"), v.token, "the token on the opener's command line")
	require.Len(t, opened, 2, "the script and one argument: %q", opened)
	page := opened[1]
	require.True(t, strings.HasPrefix(page, "file:///") && strings.HasSuffix(page, "/open.html"), "a local file: %s", page)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		// No traffic off the machine: no update, sync or QUIC probes.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("no-proxy-server", true),
		// No name resolves but the view's own address: nothing the browser
		// might look up reaches a DNS server.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelTimeout()

	problems := &pageProblems{}
	require.NoError(t, chromedp.Listen(ctx, problems.listen))

	must := func(v any, err error) any {
		t.Helper()
		require.NoError(t, err)
		return v
	}
	// The browser opens the file as xdg-open would have it: the file sends
	// it on to the view.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS(`table.releases`)),
	))
	assert.Equal(t, v.url, must(chromedp.Run(ctx, chromedp.Location())), "the file sent the browser on to the printed URL")
	listText := must(chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`table.releases`)))).(string)
	assert.Contains(t, listText, "web")
	assert.Contains(t, listText, "Drifted")
	listShot := must(chromedp.Run(ctx, chromedp.FullScreenshot(100))).([]byte)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`a.release[href$="/releases/web"]`)),
		chromedp.WaitVisible(chromedp.CSS(`details.object.drifted code.path`)),
	))
	drifted := must(chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`details.object.drifted`)))).([]*chromedp.Node)
	assert.Len(t, drifted, 2, "two drifted objects")
	driftText := must(chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`section#drift`)))).(string)
	assert.Contains(t, driftText, "spec.replicas", "the changed field")
	assert.Contains(t, driftText, "kubectl (scale)", "the manager that changed it")
	releaseShot := must(chromedp.Run(ctx, chromedp.FullScreenshot(100))).([]byte)

	// The hostile texts are text on the page: no element came of them.
	injected := must(chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`script, img`), chromedp.AtLeast(0)))).([]*chromedp.Node)
	assert.Empty(t, injected)
	bodyText := must(chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(`body`)))).(string)
	assert.Contains(t, bodyText, hostileText, "shown as the text it is")
	assert.Contains(t, bodyText, hostileManager)

	// (b) Then the browser visits the other server: it gets no cookie and
	// no token, in no header and no URL; the browser holds no cookie.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(other.URL+"/after-the-view"),
		chromedp.WaitVisible(chromedp.CSS(`p#other`)),
	))
	requests := other.all()
	require.NotEmpty(t, requests, "the other server was visited")
	for _, r := range requests {
		assert.NotContains(t, r.uri, v.token, "the token in a URL of the other server")
		assert.Empty(t, r.header.Values("Cookie"), "a cookie sent to the other server (%s)", r.uri)
		for _, referer := range r.header.Values("Referer") {
			assert.NotContains(t, referer, v.addr, "the view as the Referer of a request to the other server (%s)", r.uri)
		}
		for name, values := range r.header {
			for _, value := range values {
				assert.NotContains(t, value, v.token, "the token in the header %s of a request to the other server (%s)", name, r.uri)
			}
		}
	}
	cookies := must(chromedp.Run(ctx, func(ctx context.Context, target *chromedp.Target) (network.GetCookiesResult, error) {
		return cdp.Call(ctx, target, network.GetCookies, network.GetCookiesParams{URLs: []string{v.url, other.URL + "/"}})
	})).(network.GetCookiesResult)
	assert.Empty(t, cookies.Cookies, "the browser holds no cookie of 127.0.0.1")

	assert.Empty(t, problems.all(), "console errors, blocked or failed loads")

	dir := os.Getenv("CONVOY_VIEW_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "view-list.png"), listShot, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "view-release.png"), releaseShot, 0o644))
	t.Logf("screenshots in %s", dir)
}
