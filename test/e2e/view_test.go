//go:build unix

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// hostileText is what the cluster's texts hold in the view's tests: markup
// and quotes, which the pages must show as text.
const hostileText = `<script>alert("x")</script>'"><img src=x>`

// hostileManager is a field manager with markup (the API server allows any
// printable text of up to 128 characters).
const hostileManager = `ops<script>"x"</script>`

// viewSecret is a Secret's value of the view's Release: the preview must
// not show it.
const viewSecret = "hunter2-view-s3cret"

// viewFixture is a Release for the view: applied, then drifted by two
// managers (kubectl scale; a patch by hostileManager of a ConfigMap value),
// with an object the next sync would prune, a health rule whose message is
// hostile, and a hostile annotation.
func viewFixture(t *testing.T) string {
	t.Helper()
	ns := newNamespace(t)
	files := webManifests("blue", "1.0")
	files["old.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old}\ndata: {a: b}\n"
	files["secret.yaml"] = "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: " + viewSecret + "}\n"
	mustKubectl(t, "", fmt.Sprintf(`apiVersion: convoy.kumodo.io/v1alpha1
kind: HealthRuleSet
metadata: {name: hostile, namespace: %s, labels: {view: hostile}}
spec:
  rules:
  - apiVersion: v1
    resources: [configmaps]
    expression: "false"
    message: %q
`, ns, hostileText), "apply", "-f", "-")
	newDriftRelease(t, ns, "web", files, assessed(0), func(r *convoyv1alpha1.Release) {
		r.Spec.HealthAssessment.LocalRuleSetSelector = &convoyv1alpha1.LabelSelector{MatchLabels: map[string]string{"view": "hostile"}}
		r.Annotations = map[string]string{"note": hostileText}
	})
	newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	delete(files, "old.yaml")
	setManifests(t, ns, "web", files)
	mustKubectl(t, "", "", "scale", "deployment", "web", "-n", ns, "--replicas=5")
	mustKubectl(t, "", "", "patch", "configmap", "settings", "-n", ns, "--field-manager="+hostileManager, "--type=merge",
		"-p", fmt.Sprintf(`{"data":{"color":%q}}`, hostileText))
	eventually(t, "the drift of both objects and the health message", func(ctx context.Context) error {
		d := getDiff(t, ns, "web", "")
		if len(d.ExtraObjects) != 1 {
			return fmt.Errorf("extra objects %+v", d.ExtraObjects)
		}
		modified := 0
		for _, o := range d.Objects {
			if o.Status == "Modified" {
				modified++
			}
		}
		if modified != 2 {
			return fmt.Errorf("%d objects modified", modified)
		}
		e, err := findEntryStatus(t, ns, "web", "ConfigMap", "settings")
		if err != nil {
			return err
		}
		if e.Message != hostileText {
			return fmt.Errorf("health message %q", e.Message)
		}
		return nil
	})
	waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
	return ns
}

// viewProcess is a running `kubectl convoy view`.
type viewProcess struct {
	url   string // as printed, with the token
	addr  string // host:port
	token string
	base  string // http://addr/s/TOKEN, the prefix of every page
	// openLog is the command lines of the fake xdg-open, one argument a
	// line (startViewOpening).
	openLog string
	cmd     *exec.Cmd
	done    chan error
}

// viewURL is the URL that `kubectl convoy view` prints: the token is the
// path's second segment.
var viewURL = regexp.MustCompile(`http://127\.0\.0\.1:\d+/s/([A-Za-z0-9_-]{43})/\S*`)

// startView runs `kubectl convoy view args... --no-open` through the real
// kubectl as the user of kubeconfig (empty: the admin) and returns once it
// printed its URL; it is stopped with Ctrl-C (SIGINT) at the test's end.
func startView(t *testing.T, kubeconfig string, args ...string) *viewProcess {
	t.Helper()
	return runView(t, kubeconfig, false, args...)
}

// startViewOpening is startView with a display and without --no-open: the
// view opens a browser with xdg-open, a fake one first on PATH that logs its
// arguments to openLog.
func startViewOpening(t *testing.T, kubeconfig string, args ...string) *viewProcess {
	t.Helper()
	return runView(t, kubeconfig, true, args...)
}

func runView(t *testing.T, kubeconfig string, open bool, args ...string) *viewProcess {
	t.Helper()
	dir := buildPlugin(t)
	if kubeconfig == "" {
		kubeconfig = env.cp.AdminKubeconfig()
	}
	p := &viewProcess{done: make(chan error, 1)}
	path, display := dir+string(os.PathListSeparator)+os.Getenv("PATH"), ""
	if open {
		bin := t.TempDir()
		p.openLog = filepath.Join(bin, "xdg-open.log")
		require.NoError(t, os.WriteFile(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" >> '"+p.openLog+"'\n"), 0o755))
		path, display = bin+string(os.PathListSeparator)+path, ":convoy-test"
	} else {
		args = append([]string{"--no-open"}, args...)
	}
	cmd := exec.Command(filepath.Join(env.binDir, "kubectl"), append([]string{"convoy", "view"}, args...)...)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		"KUBECACHEDIR="+filepath.Join(t.TempDir(), "cache"),
		"PATH="+path,
		"DISPLAY="+display, "WAYLAND_DISPLAY=",
		"TMPDIR="+t.TempDir(),
	)
	p.cmd = cmd
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := viewURL.FindStringSubmatch(sc.Text()); m != nil {
				found <- m
			}
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-p.done:
			assert.NoError(t, err, "kubectl convoy view ends cleanly on Ctrl-C; stderr: %s", stderr.String())
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("kubectl convoy view did not end on Ctrl-C")
		}
	})
	select {
	case m := <-found:
		p.url, p.token = m[0], m[1]
	case err := <-p.done:
		require.FailNow(t, "kubectl convoy view ended", "%v: %s", err, stderr.String())
	case <-time.After(time.Minute):
		require.FailNow(t, "kubectl convoy view printed no URL", stderr.String())
	}
	u, err := url.Parse(p.url)
	require.NoError(t, err)
	p.addr = u.Host
	p.base = "http://" + p.addr + "/s/" + p.token
	return p
}

// browserless is an HTTP client with a cookie jar, as a browser keeps one:
// the view must put nothing in it.
func browserless(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, Timeout: time.Minute}
}

func getPage(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	res, err := c.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// noMarkupOfTheCluster: the hostile texts appear escaped, never as markup.
func noMarkupOfTheCluster(t *testing.T, body string) {
	t.Helper()
	assert.NotContains(t, body, "<script")
	assert.NotContains(t, body, "<img")
}

func TestViewPages(t *testing.T) {
	t.Parallel()
	ns := viewFixture(t)
	v := startView(t, "", "-n", ns)
	c := browserless(t)

	// The printed URL: the list, under the token's prefix; no cookie.
	res, err := c.Get(v.url)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	assert.Equal(t, v.url, res.Request.URL.String(), "no redirect")
	assert.NotEmpty(t, res.Header.Get("Content-Security-Policy"))
	assert.Equal(t, "no-referrer", res.Header.Get("Referrer-Policy"))
	assert.Empty(t, res.Header.Values("Set-Cookie"), "no cookie")

	base := v.base
	code, list := getPage(t, c, base+"/")
	require.Equal(t, 200, code)
	assert.Regexp(t, `<a class="release" href="/s/`+v.token+`/namespaces/`+ns+`/releases/web">web</a></td><td><span class="badge bad">False</span> <span class="reason">Drifted</span>`, list)
	noMarkupOfTheCluster(t, list)

	code, page := getPage(t, c, base+"/namespaces/"+ns+"/releases/web")
	require.Equal(t, 200, code, page)
	noMarkupOfTheCluster(t, page)
	for _, want := range []string{
		`<code class="path">spec.replicas</code>`,
		`<pre class="desired">2</pre>`,
		`<pre class="live">5</pre>`,
		`<span class="manager">kubectl (scale)</span>`,
		`<code class="path">data.color</code>`,
		`<pre class="live">&#34;&lt;script&gt;alert(\&#34;x\&#34;)&lt;/script&gt;`, // the live value as JSON, escaped
		`<span class="manager">ops&lt;script&gt;&#34;x&#34;&lt;/script&gt;</span>`,
		`ConfigMap ` + ns + `/old`,                                                       // the next sync would prune it
		`&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&#39;&#34;&gt;&lt;img src=x&gt;`, // the health message and the annotation
		`<dt>Last applied</dt>`,
	} {
		assert.Contains(t, page, want)
	}

	code, preview := getPage(t, c, base+"/namespaces/"+ns+"/releases/web/preview")
	require.Equal(t, 200, code, preview)
	assert.Contains(t, preview, "Secret "+ns+"/creds")
	assert.NotContains(t, preview, viewSecret, "the API redacts Secret values; the view shows what it sent")
	noMarkupOfTheCluster(t, preview)

	// Refusals: no token, a wrong token, another Host, a change.
	code, _ = getPage(t, browserless(t), "http://"+v.addr+"/")
	assert.Equal(t, 403, code, "no token")
	code, _ = getPage(t, browserless(t), "http://"+v.addr+"/?token="+v.token)
	assert.Equal(t, 403, code, "the token is no query parameter")
	code, _ = getPage(t, browserless(t), "http://"+v.addr+"/s/"+strings.Repeat("A", len(v.token))+"/")
	assert.Equal(t, 403, code, "wrong token")
	req, err := http.NewRequest(http.MethodGet, v.url, nil)
	require.NoError(t, err)
	req.Host = "rebound.example:" + strings.Split(v.addr, ":")[1]
	res, err = browserless(t).Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, 403, res.StatusCode, "another Host")
	res, err = c.Post(base+"/namespaces/"+ns+"/releases/web", "application/x-www-form-urlencoded", strings.NewReader("sync=1"))
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, 405, res.StatusCode, "the view changes nothing")
	code, _ = getPage(t, c, base+"/namespaces/"+ns+"/releases/nope")
	assert.Equal(t, 404, code)
	u, err := url.Parse(base)
	require.NoError(t, err)
	assert.Empty(t, c.Jar.Cookies(u), "the view set no cookie")
}

// The view reads with the user's access: what they may not read is said in
// place, the rest is shown.
func TestViewUsesTheUsersAccess(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	grant(t, ns, "lee", rbacPolicy("convoy.kumodo.io", "releases", "get", "list"))
	v := startView(t, user(t, "lee"), "web", "-n", ns)
	assert.Equal(t, v.base+"/namespaces/"+ns+"/releases/web", v.url, "NAME opens the Release's page")
	c := browserless(t)
	code, page := getPage(t, c, v.url)
	require.Equal(t, 200, code, page)
	assert.Contains(t, page, "Could not read the diff: you need get on releases/diff in subresources.convoy.kumodo.io (namespace "+ns+")")
	assert.Contains(t, page, "Could not read the health: you need get on releases/health")
	code, _ = getPage(t, c, v.base+"/namespaces/"+ns+"/releases/web/preview")
	assert.Equal(t, 403, code)
	code, page = getPage(t, c, v.base+"/namespaces/default/releases")
	assert.Equal(t, 403, code, "lee may not list the Releases of default")
	assert.Contains(t, page, "forbidden")
}
