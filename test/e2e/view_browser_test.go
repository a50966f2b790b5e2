//go:build unix

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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

// The view in headless Chromium, as a user opens it: the list, a click into
// the drifted Release, the changed field and its manager; nothing on the
// way may log an error or be blocked. The screenshots it takes are
// docs/users/view.md's (CONVOY_VIEW_SCREENSHOTS=docs/users/img writes them
// there).
func TestViewBrowser(t *testing.T) {
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
	v := startView(t, "", "-n", ns)

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
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(v.url),
		chromedp.WaitVisible(chromedp.CSS(`table.releases`)),
	))
	assert.Equal(t, v.url, must(chromedp.Run(ctx, chromedp.Location())), "the printed URL, not redirected")
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
