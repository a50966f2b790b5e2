package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/controlplane"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/webhook"
)

// hookClient posts deliveries to the listeners of the suite's replicas,
// over HTTPS with their serving certificate.
func hookClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: env.cp.ConvoyCA(), MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 64},
		Timeout:   15 * time.Second,
	}
}

// delivery is one webhook delivery: its method (POST when empty), path,
// headers and body.
type delivery struct {
	method string
	path   string
	header http.Header
	body   []byte
}

// post sends d to the listener of p and returns the status code and body.
func (d delivery) post(t *testing.T, client *http.Client, p *controlplane.ConvoyProcess) (int, string) {
	t.Helper()
	method := d.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, p.ReceiverURL()+d.path, bytes.NewReader(d.body))
	require.NoError(t, err)
	for k, v := range d.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// signed is a delivery of type typ to path, signed with secret (nil:
// unsigned), with the sender's event and delivery id headers.
func signed(typ webhook.Type, path string, body []byte, secret []byte, headers ...string) delivery {
	h := http.Header{}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	if secret != nil {
		k, v := webhook.Sign(typ, body, secret)
		h.Set(k, v)
	}
	return delivery{path: path, header: h, body: body}
}

// githubPushBody is the part of GitHub's push payload that the listener
// reads, and some it does not.
func githubPushBody(t *testing.T, cloneURL, ref, after string) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"ref": ref, "before": strings.Repeat("0", 40), "after": after,
		"repository": map[string]any{"clone_url": cloneURL, "ssh_url": "git@example.invalid:org/other.git", "html_url": cloneURL},
		"pusher":     map[string]any{"name": "e2e"},
	})
	require.NoError(t, err)
	return body
}

// harborPushBody is Harbor's PUSH_ARTIFACT of repository repo (project/name)
// of the registry host, tag tag.
func harborPushBody(t *testing.T, host, repo, tag string) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"type": "PUSH_ARTIFACT", "occur_at": time.Now().Unix(), "operator": "e2e",
		"event_data": map[string]any{
			"resources":  []map[string]any{{"tag": tag, "resource_url": host + "/" + repo + ":" + tag}},
			"repository": map[string]any{"name": repo[strings.LastIndex(repo, "/")+1:], "repo_full_name": repo},
		},
	})
	require.NoError(t, err)
	return body
}

// newReceiver creates the Secret secretName (key token = token, unless
// token is nil) and a Receiver of type typ naming it, of every Release of
// namespace.
func newReceiver(t *testing.T, namespace, name string, typ convoyv1alpha1.ReceiverType, secretName string, token []byte) {
	t.Helper()
	ctx := context.Background()
	if token != nil {
		_, err := kubeClient(t).CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName},
			Data: map[string][]byte{convoyv1alpha1.ReceiverSecretKey: token}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err := convoyClient(t).ConvoyV1alpha1().Receivers(namespace).Create(ctx, &convoyv1alpha1.Receiver{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: convoyv1alpha1.ReceiverSpec{Type: typ, SecretRef: convoyv1alpha1.LocalObjectReference{Name: secretName},
			Releases: convoyv1alpha1.LabelSelector{}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// waitReceiver waits until the Receiver's Ready condition has status and
// reason, and returns the Receiver.
func waitReceiver(t *testing.T, namespace, name string, status metav1.ConditionStatus, reason string) *convoyv1alpha1.Receiver {
	t.Helper()
	var r *convoyv1alpha1.Receiver
	eventually(t, fmt.Sprintf("Receiver %s/%s Ready=%s %s", namespace, name, status, reason), func(ctx context.Context) error {
		var err error
		if r, err = convoyClient(t).ConvoyV1alpha1().Receivers(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		c := apimeta.FindStatusCondition(r.Status.Conditions, "Ready")
		if c == nil || c.Status != status || c.Reason != reason || r.Status.ObservedGeneration != r.Generation {
			return fmt.Errorf("Ready %+v, observedGeneration %d of %d", c, r.Status.ObservedGeneration, r.Generation)
		}
		return nil
	})
	return r
}

// lastResolvedOf is a Release's status.lastResolved (nil when none) and its
// status.lastHandledRefreshAt.
func lastResolvedOf(t *testing.T, namespace, name string) (*convoyv1alpha1.LastResolved, string) {
	t.Helper()
	r, err := convoyClient(t).ConvoyV1alpha1().Releases(namespace).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return r.Status.LastResolved, r.Status.LastHandledRefreshAt
}

// deliverWithin10s posts d, which must be accepted, and waits at most 10 s
// for the Release namespace/name's status.lastResolved to satisfy want.
func deliverWithin10s(t *testing.T, client *http.Client, p *controlplane.ConvoyProcess, d delivery, namespace, name, what string, want func(*convoyv1alpha1.LastResolved) bool) {
	t.Helper()
	sent := time.Now()
	code, body := d.post(t, client, p)
	require.Equal(t, http.StatusAccepted, code, body)
	eventuallyWithin(t, 10*time.Second, what+" within 10 s of the delivery", func(context.Context) error {
		if lr, _ := lastResolvedOf(t, namespace, name); lr == nil || !want(lr) {
			return fmt.Errorf("lastResolved %+v", lr)
		}
		return nil
	})
	t.Logf("%s/%s: %s resolved %s after the delivery", namespace, name, what, time.Since(sent).Round(time.Millisecond))
}

// secretReads is how many GETs and LISTs of Secrets kube-apiserver served
// since it started (apiserver_request_total).
func secretReads(t *testing.T) int {
	t.Helper()
	raw, err := kubeClient(t).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	require.NoError(t, err)
	n := 0
	re := regexp.MustCompile(`(?m)^apiserver_request_total\{([^}]*)\} (\d+)$`)
	for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
		if strings.Contains(m[1], `resource="secrets"`) && (strings.Contains(m[1], `verb="GET"`) || strings.Contains(m[1], `verb="LIST"`)) {
			v, err := strconv.Atoi(m[2])
			require.NoError(t, err)
			n += v
		}
	}
	return n
}

// Webhook receivers on the real kube-apiserver, through a replica that
// does not lead (any replica takes deliveries; the leader's drift loop
// handles the refresh they record) and that resolves sources at most every
// 10 minutes on its own loops (--source-resolve-max-age=10m). The Releases
// here are checked hourly: no pass resolves their source again unless a
// refresh asks for it.
//
//   - A commit pushed to a branch and a GitHub push delivery signed with the
//     Receiver's secret: status.lastResolved names the new commit within
//     10 s; a Release of another branch of the repository is not refreshed;
//     the delivery replayed refreshes nothing; ping is answered.
//   - Unknown paths, unsigned and mis-signed deliveries, a GET, a valid
//     signature for another repository: nothing refreshed, no ref listing at
//     the Git server, no Secret read at kube-apiserver.
//   - An OCI tag moved in the registry and a Harbor delivery with the token:
//     the new digest within 10 s.
//   - The Secret is read as the Receiver's ServiceAccount: granted list and
//     watch of that Secret alone (resourceNames), Ready; of another Secret,
//     SecretForbidden; in a namespace that did not opt in to impersonation,
//     SecretForbidden.
//   - A flood of 2,000 bad deliveries in 10 s: the replica's peak memory
//     grows by less than 64 MiB (32 deliveries in flight × 1 MiB bodies,
//     and TLS), and a delivery of another namespace's Receiver during the
//     flood refreshes its Release on time.
func TestReceivers(t *testing.T) {
	// Not parallel: it counts the Secret reads of kube-apiserver and reads a
	// replica's peak memory.
	ctx := context.Background()
	replica, err := env.cp.StartConvoyAPIServer(ctx, "--leader-elect=false", "--source-resolve-max-age=10m", "--drift-workers=4")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, replica.Stop()) })
	require.NotEmpty(t, replica.ReceiverURL())
	client := hookClient()
	hourly := every(time.Hour)

	t.Run("github", func(t *testing.T) {
		ns := newNamespace(t)
		standIn := newStandIn(t)
		g := startGitRepo(t, gitserver.Options{})
		first := g.commit(t, "main", monorepo(t, "blue"))
		g.commit(t, "dev", monorepo(t, "blue"))
		newSourceRelease(t, ns, "git", gitSource(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "apps/plain"), hourly)
		newSourceRelease(t, ns, "dev", gitSource(g.url, convoyv1alpha1.GitReference{Branch: "dev"}, "apps/plain"), hourly)
		standIn.apply(ns, "git")
		waitInSync(t, ns, "git", metav1.ConditionTrue, "InSync")
		eventually(t, "the Releases resolved their branches", func(context.Context) error {
			for _, name := range []string{"git", "dev"} {
				if lr, _ := lastResolvedOf(t, ns, name); lr == nil {
					return fmt.Errorf("%s has no lastResolved", name)
				}
			}
			return nil
		})
		secret := []byte("github-secret-" + rand.Text())
		newReceiver(t, ns, "github", convoyv1alpha1.ReceiverGitHub, "hook", secret)
		path := waitReceiver(t, ns, "github", metav1.ConditionTrue, "Ready").Status.WebhookPath
		require.Regexp(t, `^/hook/[0-9a-f]{64}$`, path)

		second := g.commit(t, "main", monorepo(t, "green"))
		push := githubPushBody(t, g.url, "refs/heads/main", second)
		other := githubPushBody(t, strings.Replace(g.url, "apps.git", "other.git", 1), "refs/heads/main", second)
		unknown := "/hook/" + hex.EncodeToString(bytes.Repeat([]byte{7}, 32))
		sendBad := func(check bool) {
			for _, tc := range []struct {
				name string
				d    delivery
				code int
			}{
				{"unknown path", signed(webhook.GitHub, unknown, push, secret, "X-GitHub-Event", "push"), http.StatusNotFound},
				{"unsigned", signed(webhook.GitHub, path, push, nil, "X-GitHub-Event", "push"), http.StatusUnauthorized},
				{"mis-signed", signed(webhook.GitHub, path, push, []byte("not-the-secret"), "X-GitHub-Event", "push"), http.StatusUnauthorized},
				{"token of another type", signed(webhook.GitLab, path, push, secret, "X-Gitlab-Event", "Push Hook"), http.StatusUnauthorized},
				{"GET", delivery{method: http.MethodGet, path: path}, http.StatusMethodNotAllowed},
				{"another repository", signed(webhook.GitHub, path, other, secret, "X-GitHub-Event", "push", "X-GitHub-Delivery", "other-1"), http.StatusAccepted},
			} {
				code, body := tc.d.post(t, client, replica)
				if !check {
					continue // "another repository" is a duplicate the second time
				}
				assert.Equal(t, tc.code, code, "%s: %s", tc.name, body)
				assert.NotContains(t, body, "github", "%s: the answer names no Receiver", tc.name)
				assert.NotContains(t, body, ns, "%s: the answer names no namespace", tc.name)
			}
		}
		listings := g.server.Listings()
		// kube-apiserver counts the Secret reads of the whole cluster (the
		// namespace controller deleting other tests' namespaces lists
		// theirs): such a read may fall in a window, a read per delivery
		// falls in every one, four at least (the deliveries that reach the
		// Receiver's path). The bad deliveries go in up to five windows;
		// the quietest must see fewer reads than that, and none on a quiet
		// machine.
		fewest := -1
		for attempt := 0; attempt < 5 && fewest != 0; attempt++ {
			reads := secretReads(t)
			sendBad(attempt == 0)
			if extra := secretReads(t) - reads; fewest < 0 || extra < fewest {
				fewest = extra
			}
		}
		t.Logf("github: Secret reads in the quietest window of bad deliveries: %d", fewest)
		assert.Less(t, fewest, 4, "no Secret read for a delivery")
		time.Sleep(3 * time.Second) // a refresh is handled within about a second
		assert.Equal(t, listings, g.server.Listings(), "no ref listing at the Git server")
		lr, handled := lastResolvedOf(t, ns, "git")
		assert.Equal(t, first, lr.Commit, "the first commit still: nothing resolved the source again")
		assert.Empty(t, handled, "no refresh handled")

		good := signed(webhook.GitHub, path, push, secret, "X-GitHub-Event", "push", "X-GitHub-Delivery", "delivery-1")
		deliverWithin10s(t, client, replica, good, ns, "git", "the new commit", func(lr *convoyv1alpha1.LastResolved) bool { return lr.Commit == second })
		eventually(t, "an Event names the Receiver", func(ctx context.Context) error {
			events, err := kubeClient(t).EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.Reason == "RefreshRequested" && e.Regarding.Name == "git" && strings.Contains(e.Note, "receiver "+ns+"/github") {
					return nil
				}
			}
			return fmt.Errorf("no RefreshRequested Event naming the Receiver among %d", len(events.Items))
		})
		_, handled = lastResolvedOf(t, ns, "dev")
		assert.Empty(t, handled, "the Release of another branch is not refreshed")

		release, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(ctx, "git", metav1.GetOptions{})
		require.NoError(t, err)
		requested := release.Annotations[convoyv1alpha1.AnnotationRefreshRequestedAt]
		time.Sleep(1100 * time.Millisecond) // past the join of refresh requests
		code, body := good.post(t, client, replica)
		assert.Equal(t, http.StatusOK, code, "a replayed delivery: %s", body)
		release, err = convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(ctx, "git", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, requested, release.Annotations[convoyv1alpha1.AnnotationRefreshRequestedAt], "a replayed delivery requests no refresh")

		ping := signed(webhook.GitHub, path, []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`), secret, "X-GitHub-Event", "ping", "X-GitHub-Delivery", "ping-1")
		code, body = ping.post(t, client, replica)
		assert.Equal(t, http.StatusOK, code, "ping: %s", body)
	})

	t.Run("harbor", func(t *testing.T) {
		ns := newNamespace(t)
		standIn := newStandIn(t)
		reg := startTestRegistry(t, ociregistry.Options{})
		signedBundle(t, reg, "apps/web", "v1", "blue")
		newSourceRelease(t, ns, "oci", ociSource(reg.URL("apps/web"), "v1", ""), hourly)
		standIn.apply(ns, "oci")
		waitInSync(t, ns, "oci", metav1.ConditionTrue, "InSync")
		token := []byte("harbor-token-" + rand.Text())
		newReceiver(t, ns, "harbor", convoyv1alpha1.ReceiverHarbor, "harbor", token)
		path := waitReceiver(t, ns, "harbor", metav1.ConditionTrue, "Ready").Status.WebhookPath

		moved := signedBundle(t, reg, "apps/web", "v1", "green")
		body := harborPushBody(t, reg.Host(), "apps/web", "v1")
		code, answer := signed(webhook.Harbor, path, body, []byte("wrong-token-of-harbor"), "X-Request-Id", "h-0").post(t, client, replica)
		assert.Equal(t, http.StatusUnauthorized, code, answer)
		deliverWithin10s(t, client, replica, signed(webhook.Harbor, path, body, token, "X-Request-Id", "h-1"), ns, "oci", "the tag's new digest",
			func(lr *convoyv1alpha1.LastResolved) bool { return lr.Digest == moved })
	})

	t.Run("tenancy", func(t *testing.T) {
		ns := newBareNamespace(t)
		c := kubeClient(t)
		_, err := c.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "receiver-secret"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"hook"}, Verbs: []string{"list", "watch"}}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = c.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "receiver-secret"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "receiver-secret"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		newReceiver(t, ns, "granted", convoyv1alpha1.ReceiverGitHub, "hook", []byte("granted-shared-secret-"+rand.Text()))
		newReceiver(t, ns, "other", convoyv1alpha1.ReceiverGitHub, "other", []byte("other-shared-secret-"+rand.Text()))
		newReceiver(t, ns, "missing", convoyv1alpha1.ReceiverGitHub, "hook-missing", nil)
		granted := waitReceiver(t, ns, "granted", metav1.ConditionTrue, "Ready")
		waitReceiver(t, ns, "other", metav1.ConditionFalse, "SecretForbidden")
		waitReceiver(t, ns, "missing", metav1.ConditionFalse, "SecretForbidden")
		// The printer columns: the path with -o wide only.
		out := mustKubectl(t, "", "", "get", "receivers", "-n", ns)
		assert.Regexp(t, `(?m)^NAME\s+TYPE\s+READY\s+REASON\s+AGE$`, out)
		assert.Regexp(t, `(?m)^other\s+github\s+False\s+SecretForbidden\s+\S+$`, out)
		out = mustKubectl(t, "", "", "get", "receivers", "-n", ns, "-o", "wide")
		assert.Regexp(t, `(?m)^granted\s+github\s+True\s+Ready\s+`+regexp.QuoteMeta(granted.Status.WebhookPath)+`\s+\S+$`, out)

		notGranted := newNamespaceNotGranted(t)
		newReceiver(t, notGranted, "hook", convoyv1alpha1.ReceiverGitHub, "hook", []byte("not-granted-shared-secret-"+rand.Text()))
		r := waitReceiver(t, notGranted, "hook", metav1.ConditionFalse, "SecretForbidden")
		assert.Empty(t, r.Status.WebhookPath)

		// Granted a Secret that does not exist: SecretNotFound.
		_, err = c.RbacV1().Roles(ns).Update(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "receiver-secret"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"hook", "hook-missing"}, Verbs: []string{"list", "watch"}}}}, metav1.UpdateOptions{})
		require.NoError(t, err)
		waitReceiver(t, ns, "missing", metav1.ConditionFalse, "SecretNotFound")
	})

	t.Run("flood", func(t *testing.T) {
		a, b := newNamespace(t), newNamespace(t)
		standIn := newStandIn(t)
		g := startGitRepo(t, gitserver.Options{})
		g.commit(t, "main", monorepo(t, "blue"))
		newSourceRelease(t, b, "web", gitSource(g.url, convoyv1alpha1.GitReference{Branch: "main"}, "apps/plain"), every(10*time.Second))
		standIn.apply(b, "web")
		waitInSync(t, b, "web", metav1.ConditionTrue, "InSync")
		secretA, secretB := []byte("a-"+rand.Text()), []byte("b-"+rand.Text())
		newReceiver(t, a, "hook", convoyv1alpha1.ReceiverGitHub, "hook", secretA)
		newReceiver(t, b, "hook", convoyv1alpha1.ReceiverGitHub, "hook", secretB)
		pathA := waitReceiver(t, a, "hook", metav1.ConditionTrue, "Ready").Status.WebhookPath
		pathB := waitReceiver(t, b, "hook", metav1.ConditionTrue, "Ready").Status.WebhookPath

		large := bytes.Repeat([]byte{'x'}, 1<<20)
		bad := []delivery{
			signed(webhook.GitHub, "/hook/"+strings.Repeat("ab", 32), large, secretA, "X-GitHub-Event", "push"),
			signed(webhook.GitHub, pathA, large, []byte("wrong"), "X-GitHub-Event", "push"),
			signed(webhook.GitHub, pathA, append(large, large...), secretA, "X-GitHub-Event", "push"),
			signed(webhook.GitHub, pathA, []byte("{not json"), secretA, "X-GitHub-Event", "push"),
		}
		before := peakMemoryOf(t, replica.PID())
		const total, workers = 2000, 32
		var sent atomic.Int64
		codes := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for w := range workers {
			wg.Go(func() {
				for i := int(sent.Add(1)); i <= total; i = int(sent.Add(1)) {
					// 200 a second in all: 2,000 in 10 s.
					if d := time.Until(start.Add(time.Duration(i) * 5 * time.Millisecond)); d > 0 {
						time.Sleep(d)
					}
					code := postQuietly(client, replica, bad[(i+w)%len(bad)])
					mu.Lock()
					codes[code]++
					mu.Unlock()
				}
			})
		}
		// During the flood, another namespace's Receiver is heard and its
		// Release refreshed on time.
		time.Sleep(3 * time.Second)
		offset := logSize(t, replica)
		second := g.commit(t, "main", monorepo(t, "green"))
		deliverWithin10s(t, client, replica, signed(webhook.GitHub, pathB, githubPushBody(t, g.url, "refs/heads/main", second), secretB,
			"X-GitHub-Event", "push", "X-GitHub-Delivery", "b-1"), b, "web", "the new commit, during the flood",
			func(lr *convoyv1alpha1.LastResolved) bool { return lr.Commit == second })
		wg.Wait()
		took := time.Since(start)
		after := peakMemoryOf(t, replica.PID())
		lateness := metricFloat(t, replica, `convoy_observer_pass_lateness_seconds{loop="drift"}`)
		driftPassOf(t, replica, offset, b, "web", 1, time.Now().Add(30*time.Second), func() {})
		t.Logf("flood: %d bad deliveries in %s, answers %v; peak memory of the replica %d MiB before, %d MiB after; drift lateness %.1fs",
			total, took.Round(time.Millisecond), codes, before>>20, after>>20, lateness)
		assert.Less(t, after-before, int64(64<<20), "the flood's memory is bounded")
		assert.Less(t, lateness, 5.0, "the replica's drift loop stays on time")
		for code := range codes {
			// 0: the connection closed on a body past the cap, before the
			// client finished sending it.
			assert.Contains(t, []int{0, http.StatusNotFound, http.StatusUnauthorized, http.StatusRequestEntityTooLarge, http.StatusBadRequest,
				http.StatusTooManyRequests, http.StatusServiceUnavailable}, code, "every bad delivery is refused")
		}
	})
}

// postQuietly posts d and returns the status code, 0 when the request
// failed (a connection closed on an over-long body).
func postQuietly(client *http.Client, p *controlplane.ConvoyProcess, d delivery) int {
	req, err := http.NewRequest(http.MethodPost, p.ReceiverURL()+d.path, bytes.NewReader(d.body))
	if err != nil {
		return 0
	}
	for k, v := range d.header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	return resp.StatusCode
}
