package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/receiverindex"
	"github.com/kumodo/convoy-apiserver/pkg/webhook"
)

// fakeIndex is the index: Receivers by path.
type fakeIndex map[string]receiverindex.Entry

func (f fakeIndex) Lookup(path string) (receiverindex.Entry, bool) {
	e, ok := f[path]
	return e, ok
}

// fakeReleases lists a slice of Releases, as the API server would.
type fakeReleases struct {
	mu    sync.Mutex
	items []convoyv1alpha1.Release
	lists int
	err   error
}

func (f *fakeReleases) List(_ context.Context, namespace string, selector labels.Selector) ([]convoyv1alpha1.Release, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.err != nil {
		return nil, f.err
	}
	var out []convoyv1alpha1.Release
	for _, r := range f.items {
		if r.Namespace == namespace && selector.Matches(labels.Set(r.Labels)) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeReleases) listed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

// recordingRefresher records the refreshes: "NS/NAME by REQUESTER".
type recordingRefresher struct {
	mu    sync.Mutex
	calls []string
	err   error
	// entered, when set, is sent to as a refresh starts, and release then
	// holds it until closed.
	entered chan struct{}
	release chan struct{}
	panics  bool
}

func (r *recordingRefresher) Refresh(_ context.Context, namespace, name, requester string) (metav1.MicroTime, error) {
	if r.panics {
		panic("refresher panic")
	}
	if r.entered != nil {
		r.entered <- struct{}{}
		<-r.release
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return metav1.MicroTime{}, r.err
	}
	r.calls = append(r.calls, namespace+"/"+name+" by "+requester)
	return metav1.NowMicro(), nil
}

func (r *recordingRefresher) refreshed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// The Receivers of the tests.
var (
	pathGitHub = "/hook/" + strings.Repeat("a", 64)
	pathGitLab = "/hook/" + strings.Repeat("b", 64)
	pathHarbor = "/hook/" + strings.Repeat("c", 64)
	pathOther  = "/hook/" + strings.Repeat("d", 64) // another GitHub Receiver
	secret     = []byte("s3cret-token-value")
)

func testIndex() fakeIndex {
	return fakeIndex{
		pathGitHub: {Namespace: "team-a", Name: "gh-receiver", UID: "uid-gh", Type: webhook.GitHub, Releases: labels.Everything(), Token: secret, Path: pathGitHub},
		pathGitLab: {Namespace: "team-a", Name: "gl-receiver", UID: "uid-gl", Type: webhook.GitLab, Events: []string{"Push Hook"},
			Releases: labels.SelectorFromSet(labels.Set{"tier": "web"}), Token: secret, Path: pathGitLab},
		pathHarbor: {Namespace: "team-b", Name: "harbor-receiver", UID: "uid-hb", Type: webhook.Harbor, Releases: labels.Everything(), Token: secret, Path: pathHarbor},
		pathOther:  {Namespace: "team-c", Name: "other-receiver", UID: "uid-other", Type: webhook.GitHub, Releases: labels.Everything(), Token: secret, Path: pathOther},
	}
}

// release is a Release of namespace/name with a source and labels.
func release(namespace, name string, src convoyv1alpha1.ReleaseSource, values *convoyv1alpha1.ValuesSource, lbls map[string]string) convoyv1alpha1.Release {
	return convoyv1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: lbls},
		Spec:       convoyv1alpha1.ReleaseSpec{Source: src, ValuesSource: values},
	}
}

func gitSource(url string, ref convoyv1alpha1.GitReference) *convoyv1alpha1.GitRepositorySource {
	return &convoyv1alpha1.GitRepositorySource{URL: url, Ref: ref}
}

const appRepo = "https://github.com/org/app"

func testReleases() []convoyv1alpha1.Release {
	main := convoyv1alpha1.GitReference{Branch: "main"}
	web := map[string]string{"tier": "web"}
	return []convoyv1alpha1.Release{
		release("team-a", "app-main", convoyv1alpha1.ReleaseSource{Git: gitSource(appRepo, main)}, nil, web),
		release("team-a", "app-dev", convoyv1alpha1.ReleaseSource{Git: gitSource(appRepo+".git", convoyv1alpha1.GitReference{Branch: "dev"})}, nil, web),
		release("team-a", "app-pinned", convoyv1alpha1.ReleaseSource{Git: gitSource(appRepo, convoyv1alpha1.GitReference{Branch: "main", Commit: strings.Repeat("0", 40)})}, nil, web),
		release("team-a", "values-main", convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "chart"}},
			&convoyv1alpha1.ValuesSource{Git: gitSource("ssh://git@github.com/org/app.git", main)}, nil),
		release("team-a", "lib", convoyv1alpha1.ReleaseSource{Git: gitSource("https://github.com/org/lib", main)}, nil, web),
		release("team-b", "app-main", convoyv1alpha1.ReleaseSource{Git: gitSource(appRepo, main)}, nil, nil),
		release("team-b", "chart", convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: "oci://harbor.example.com/proj/chart", Tag: "1.2.0"}}, nil, nil),
		release("team-b", "chart-old", convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: "oci://harbor.example.com/proj/chart", Tag: "1.1.0"}}, nil, nil),
	}
}

// env is a Listener on fakes.
type env struct {
	l         *Listener
	releases  *fakeReleases
	refresher *recordingRefresher
	clock     *clocktesting.FakePassiveClock
}

func newEnv(t testing.TB, mutate func(*Options)) *env {
	t.Helper()
	RegisterMetrics() // unregistered metrics count nothing
	o := NewOptions()
	o.BindAddress, o.PlainHTTP = "127.0.0.1:0", true
	if mutate != nil {
		mutate(o)
	}
	e := &env{releases: &fakeReleases{items: testReleases()}, refresher: &recordingRefresher{}, clock: clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))}
	l, err := New(Config{Options: *o, Index: testIndex(), Releases: e.releases, Refresher: e.refresher, Clock: e.clock})
	require.NoError(t, err)
	e.l = l
	return e
}

// do sends r to the handler and returns the answer.
func (e *env) do(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	e.l.Handler().ServeHTTP(w, r)
	return w
}

// githubPush is a GitHub push of ref to repo.
func githubPush(repo, ref string) []byte {
	body, _ := json.Marshal(map[string]any{"ref": ref, "repository": map[string]string{"clone_url": repo + ".git", "html_url": repo}})
	return body
}

// signed is a delivery to path of a Receiver of type typ, event and id,
// signed with key.
func signed(path string, typ webhook.Type, event, id string, body, key []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	h, v := webhook.Sign(typ, body, key)
	r.Header.Set(h, v)
	switch typ {
	case webhook.GitHub:
		r.Header.Set("X-GitHub-Event", event)
		r.Header.Set("X-GitHub-Delivery", id)
	case webhook.GitLab:
		r.Header.Set("X-Gitlab-Event", event)
		r.Header.Set("X-Gitlab-Event-UUID", id)
	default:
		r.Header.Set("X-Request-Id", id)
	}
	return r
}

// push is a signed GitHub push of main of the app's repository, delivery id.
func push(id string) *http.Request {
	return pushTo(pathGitHub, id, appRepo, "refs/heads/main")
}

// pushTo is a signed GitHub push of repo's ref to path, delivery id.
func pushTo(path, id, repo, ref string) *http.Request {
	return signed(path, webhook.GitHub, "push", id, githubPush(repo, ref), secret)
}

// counted returns the count of deliveries of typ and o.
func counted(t testing.TB, typ string, o outcome) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(deliveries.WithLabelValues(typ, string(o)))
	require.NoError(t, err)
	return v
}

func refreshCount(t testing.TB, typ string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(refreshes.WithLabelValues(typ))
	require.NoError(t, err)
	return v
}

// by is the requester of a GitHub delivery id of the test's GitHub Receiver.
func by(id string) string {
	return fmt.Sprintf("receiver team-a/gh-receiver (github delivery %s)", id)
}
