//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/controlplane"
)

// replicaGet GETs path from one convoy-apiserver replica directly, as the
// admin (system:masters), skipping the aggregator.
func replicaGet(t *testing.T, p *controlplane.ConvoyProcess, path string) (int, string) {
	t.Helper()
	tlsConfig, err := rest.TLSConfigFor(env.cp.AdminConfig())
	require.NoError(t, err)
	tlsConfig.RootCAs, tlsConfig.InsecureSkipVerify = nil, true // the replica's own serving certificate
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 10 * time.Second}
	resp, err := client.Get(p.URL() + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// metric returns the value of a metric line of a replica, "" when absent.
func metric(t *testing.T, p *controlplane.ConvoyProcess, series string) string {
	t.Helper()
	code, body := replicaGet(t, p, "/metrics")
	require.Equal(t, http.StatusOK, code, body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

func isLeading(t *testing.T, p *controlplane.ConvoyProcess) bool {
	return metric(t, p, "convoy_observer_leader") == "1"
}

// startSecondReplica starts a second convoy-apiserver beside the one the
// APIService points at, and returns both; the one the APIService points at
// at the end of the test keeps serving the tests after it, the other stops.
func startSecondReplica(t *testing.T) (first, second *controlplane.ConvoyProcess) {
	t.Helper()
	first = env.cp.ConvoyAPIServer()
	second, err := env.cp.StartConvoyAPIServer(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, p := range []*controlplane.ConvoyProcess{first, second} {
			if p != env.cp.ConvoyAPIServer() {
				_ = p.Stop()
			}
		}
	})
	return first, second
}

// leaderOf waits until exactly one of a and b leads, and returns it first.
func leaderOf(t *testing.T, a, b *controlplane.ConvoyProcess) (leader, follower *controlplane.ConvoyProcess) {
	t.Helper()
	eventually(t, "one leader", func(context.Context) error {
		switch la, lb := isLeading(t, a), isLeading(t, b); {
		case la && !lb:
			leader, follower = a, b
		case lb && !la:
			leader, follower = b, a
		default:
			return fmt.Errorf("leading: %v, %v", la, lb)
		}
		return nil
	})
	return leader, follower
}

// failOver stops the leader and waits until the follower leads; the
// APIService points at the follower if it pointed at the leader.
func failOver(t *testing.T, leader, follower *controlplane.ConvoyProcess) {
	t.Helper()
	require.NoError(t, leader.Stop())
	if env.cp.ConvoyAPIServer() == leader {
		require.NoError(t, env.cp.RegisterAPIService(context.Background(), follower))
	}
	eventually(t, "the follower takes over", func(context.Context) error {
		if !isLeading(t, follower) {
			return fmt.Errorf("not leading yet")
		}
		return nil
	})
}

func TestHAOneReplicaRunsTheLoops(t *testing.T) {
	// Not parallel: it starts a second replica and stops the leader.
	first, second := startSecondReplica(t)

	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"), assessed(0))
	newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")

	// Every replica serves the API.
	for _, p := range []*controlplane.ConvoyProcess{first, second} {
		code, body := replicaGet(t, p, healthPath(ns, "web"))
		assert.Equal(t, http.StatusOK, code, body)
		assert.Contains(t, body, `"kind":"ReleaseHealth"`)
	}

	// Exactly one leads, and only it runs passes.
	leader, follower := leaderOf(t, first, second)
	passes := func(p *controlplane.ConvoyProcess) bool {
		_, body := replicaGet(t, p, "/metrics")
		return strings.Contains(body, "convoy_observer_pass_results_total{")
	}
	eventually(t, "the leader runs passes", func(context.Context) error {
		if !passes(leader) {
			return fmt.Errorf("no passes on the leader yet")
		}
		return nil
	})
	assert.False(t, passes(follower), "the follower runs no pass")
	_, body := replicaGet(t, leader, "/metrics")
	for _, m := range []string{"convoy_observer_pass_duration_seconds_count", "convoy_target_requests_total{", "workqueue_depth{name=\"drift\"}", "convoy_observer_sync_requests_total"} {
		assert.Contains(t, body, m)
	}
	assert.Regexp(t, `convoy_target_requests_total\{cluster="",code="200",operation="dry_run"\} [1-9]`, body)
	assert.Regexp(t, `convoy_target_requests_total\{cluster="",code="200",operation="read"\} [1-9]`, body)

	// The leader goes away: the other takes over within the lease duration
	// (6s in the harness), and conditions keep being written.
	failOver(t, leader, follower)
	newDriftRelease(t, ns, "after", webManifests("green", "1.0"))
	newStandIn(t).apply(ns, "after")
	waitInSync(t, ns, "after", metav1.ConditionTrue, "InSync")
	waitHealthy(t, ns, "after", metav1.ConditionTrue, "NotConfigured")
}

// contestedOn returns the contested fields of the Deployment web in the
// /diff of the Release namespace/web that the replica p serves.
func contestedOn(t *testing.T, p *controlplane.ConvoyProcess, namespace string) []subresourcesv1alpha1.ContestedField {
	t.Helper()
	code, body := replicaGet(t, p, diffPath(namespace, "web"))
	require.Equal(t, http.StatusOK, code, body)
	var d subresourcesv1alpha1.ReleaseDiff
	require.NoError(t, json.Unmarshal([]byte(body), &d), body)
	return objectDiff(t, d, "Deployment", "web").Contested
}

// A contested field is in the Release's status.selfHeal: /diff from each
// replica lists the same, and after a failover the new leader keeps backing
// off (the e2e suite's --contest-max-backoff, 16s) instead of healing at each
// pass and counting the take-backs again.
func TestHAContestSurvivesFailover(t *testing.T) {
	// Not parallel: it starts a second replica, stops the leader, and counts
	// passes and sync requests in a fixed sleep.
	first, second := startSecondReplica(t)
	ns, requests, _ := contestedRelease(t)

	// Passes every 2s: contested after 3 heals, then requests 4s, 8s and
	// 16s apart.
	var before *convoyv1alpha1.SelfHealStatus
	eventually(t, "status.selfHeal at --contest-max-backoff", func(ctx context.Context) error {
		r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s := r.Status.SelfHeal
		if s == nil || len(s.Contested) != 1 || s.Backoff == nil || s.Backoff.Duration != 16*time.Second || s.NextRequestAt == nil {
			return fmt.Errorf("selfHeal %+v", s)
		}
		before = s
		return nil
	})
	c := before.Contested[0]
	assert.Equal(t, []string{"apps", "Deployment", ns, "web", "spec.replicas", "contender", "scale"},
		[]string{c.Group, c.Kind, c.Namespace, c.Name, c.Path, c.Manager, c.Subresource})

	// Both replicas answer the same: the leader's status, not a memory.
	eventually(t, "the same contested fields from each replica", func(context.Context) error {
		a, b := contestedOn(t, first, ns), contestedOn(t, second, ns)
		if len(a) != 1 || a[0].Manager != "contender" || !apiequality.Semantic.DeepEqual(a, b) {
			return fmt.Errorf("first %+v, second %+v", a, b)
		}
		return nil
	})

	leader, follower := leaderOf(t, first, second)
	failOver(t, leader, follower)
	passes := countPassesOn(t, follower, driftPass, ns, "web")
	base := requests.Load()
	time.Sleep(20 * time.Second)
	during := requests.Load() - base
	t.Logf("%d sync requests in the 20s after the failover, against %d passes", during, passes.since(t))
	passes.requireAtLeast(t, 6)
	// Without the status, the new leader would heal at each pass until it
	// counted 3 take-backs, then back off from 4s: 5 requests or more.
	assert.LessOrEqual(t, during, 2, "the new leader keeps backing off")

	r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	after := r.Status.SelfHeal
	require.NotNil(t, after)
	require.Len(t, after.Contested, 1)
	assert.True(t, before.Contested[0].Since.Equal(&after.Contested[0].Since), "the same contest, not found again: since %v, then %v",
		before.Contested[0].Since, after.Contested[0].Since)
	assert.Equal(t, 16*time.Second, after.Backoff.Duration)
	assert.Len(t, contestedOn(t, follower, ns), 1)
}

// A spec change that a leader change cuts short (issue 63): the leader that
// stops drops what it holds, and the next leader's passes write both
// conditions at the new generation, their verdicts unchanged, in at most
// one write per Release of its own (the old leader may have written one).
func TestHAStatusWritesAcrossALeaderChange(t *testing.T) {
	// Not parallel: it starts a second replica and stops the leader.
	first, second := startSecondReplica(t)
	ctx := context.Background()
	ns := newNamespace(t)
	standIn := newStandIn(t)
	var names []string
	for i := range 5 {
		name := fmt.Sprintf("web-%d", i)
		names = append(names, name)
		newDriftRelease(t, ns, name, map[string]string{"config.yaml": fmt.Sprintf(configMapManifest, "blue")}, every(time.Hour))
		standIn.apply(ns, name)
	}
	healthy := waitBothObserved(t, ns, names, 1, "InSync")
	leader, follower := leaderOf(t, first, second)
	writes := watchStatusWrites(t, ns)

	for _, name := range names {
		r, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Patch(ctx, name, types.MergePatchType,
			[]byte(`{"spec":{"syncPolicy":{"interval":"2h"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		require.Equal(t, int64(2), r.Generation)
	}
	failOver(t, leader, follower)
	assert.Equal(t, healthy, waitBothObserved(t, ns, names, 2, "InSync"), "the verdicts did not move")
	time.Sleep(2 * time.Second) // no write comes after
	got := writes.take()
	for _, name := range names {
		assert.Positive(t, got[name], name)
		assert.LessOrEqual(t, got[name], 2, "status writes of %s for one spec change across a leader change", name)
	}
}
