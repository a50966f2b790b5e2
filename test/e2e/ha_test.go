//go:build unix

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

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

func TestHAOneReplicaRunsTheLoops(t *testing.T) {
	ctx := context.Background()
	first := env.cp.ConvoyAPIServer()
	second, err := env.cp.StartConvoyAPIServer(ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		// The replica the APIService points at serves the tests after this one.
		for _, p := range []*controlplane.ConvoyProcess{first, second} {
			if p != env.cp.ConvoyAPIServer() {
				_ = p.Stop()
			}
		}
	})

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
	var leader, follower *controlplane.ConvoyProcess
	eventually(t, "one leader", func(context.Context) error {
		a, b := isLeading(t, first), isLeading(t, second)
		switch {
		case a && !b:
			leader, follower = first, second
		case b && !a:
			leader, follower = second, first
		default:
			return fmt.Errorf("leading: first %v, second %v", a, b)
		}
		return nil
	})
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
	require.NoError(t, leader.Stop())
	if env.cp.ConvoyAPIServer() == leader {
		require.NoError(t, env.cp.RegisterAPIService(ctx, follower))
	}
	eventually(t, "the follower takes over", func(context.Context) error {
		if !isLeading(t, follower) {
			return fmt.Errorf("not leading yet")
		}
		return nil
	})
	newDriftRelease(t, ns, "after", webManifests("green", "1.0"))
	newStandIn(t).apply(ns, "after")
	waitInSync(t, ns, "after", metav1.ConditionTrue, "InSync")
	waitHealthy(t, ns, "after", metav1.ConditionTrue, "NotConfigured")
}
