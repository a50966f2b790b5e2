//go:build unix

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/controlplane"
)

// silentListener accepts connections on 127.0.0.1 and never answers them:
// a registry that holds every request until its client gives up. It counts
// the connections it took.
type silentListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startSilentListener(t *testing.T) *silentListener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &silentListener{Listener: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.conns {
			_ = c.Close()
		}
	})
	return s
}

func (s *silentListener) taken() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// every sets spec.syncPolicy.interval.
func every(d time.Duration) releaseOption {
	return func(r *convoyv1alpha1.Release) { r.Spec.SyncPolicy.Interval = &metav1.Duration{Duration: d} }
}

// driftPassOf waits until the replica p logs a drift pass of the Release
// namespace/name at generation after offset (a log size), until deadline;
// it fails the test past it.
func driftPassOf(t *testing.T, p *controlplane.ConvoyProcess, offset int64, namespace, name string, generation int64, deadline time.Time, each func()) {
	t.Helper()
	want := []string{`"Drift pass"`, ` release="` + namespace + "/" + name + `"`, " generation=" + strconv.FormatInt(generation, 10) + " "}
	for {
		each()
		f, err := os.Open(p.LogFile())
		require.NoError(t, err)
		_, err = f.Seek(offset, 0)
		require.NoError(t, err)
		found := false
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() && !found {
			line := sc.Text()
			found = true
			for _, w := range want {
				found = found && strings.Contains(line, w)
			}
		}
		f.Close()
		if found {
			return
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "no drift pass of the new spec in time", "%s/%s generation %d in %s", namespace, name, generation, p.LogFile())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// metricFloat is a replica's metric line as a number, -1 when absent.
func metricFloat(t *testing.T, p *controlplane.ConvoyProcess, series string) float64 {
	t.Helper()
	v := metric(t, p, series)
	if v == "" {
		return -1
	}
	f, err := strconv.ParseFloat(v, 64)
	require.NoError(t, err)
	return f
}

// Namespace a's 40 Releases name a registry that accepts connections and
// never answers. On a replica with a fetch timeout of 20s and 4 workers,
// their passes would hold every worker for the fetch timeout each, about
// ten minutes of passes ahead of anyone else's. They park instead (the
// registry holds no worker), and namespace b's Release, whose spec changes
// meanwhile, shows its new spec within one fetch timeout plus its
// interval; the loop stays on time throughout.
func TestFairLoopsHangingSources(t *testing.T) {
	// Not parallel: it starts a second replica and measures its loop's lateness.
	const (
		fetchTimeout = 20 * time.Second
		interval     = 10 * time.Second
		hostile      = 40
	)
	ctx := context.Background()
	silent := startSilentListener(t)
	// Its own loops beside the leader's (which run the same Releases with
	// the suite's fetch timeout of 3s): its log and metrics tell its passes.
	replica, err := env.cp.StartConvoyAPIServer(ctx, "--leader-elect=false", "--fetch-timeout="+fetchTimeout.String(), "--drift-workers=4")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, replica.Stop()) })

	a, b := newNamespace(t), newNamespace(t)
	t.Cleanup(func() {
		// The suite's server goes on with the next tests: a's Releases go.
		assert.NoError(t, convoyClient(t).ConvoyV1alpha1().Releases(a).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	})
	offset := logSize(t, replica)
	newDriftRelease(t, b, "web", webManifests("blue", "1.0"), every(interval))
	driftPassOf(t, replica, offset, b, "web", 1, time.Now().Add(2*time.Minute), func() {})
	for i := range hostile {
		newSourceRelease(t, a, fmt.Sprintf("app-%d", i),
			ociSource(fmt.Sprintf("oci://%s/a/app-%d", silent.Addr(), i), "1", ""), every(3*interval))
	}
	eventually(t, "a's passes parked on the replica, waiting for the silent registry", func(context.Context) error {
		if parked := metricFloat(t, replica, `convoy_observer_passes_parked{loop="drift"}`); parked < hostile/2 {
			return fmt.Errorf("%v passes parked, %d connections taken", parked, silent.taken())
		}
		return nil
	})

	web, err := convoyClient(t).ConvoyV1alpha1().Releases(b).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	web.Spec.SyncPolicy.Interval = &metav1.Duration{Duration: interval + time.Second}
	offset = logSize(t, replica)
	changed := time.Now()
	web, err = convoyClient(t).ConvoyV1alpha1().Releases(b).Update(ctx, web, metav1.UpdateOptions{})
	require.NoError(t, err)
	var lateness, oldest float64
	driftPassOf(t, replica, offset, b, "web", web.Generation, changed.Add(fetchTimeout+interval), func() {
		lateness = max(lateness, metricFloat(t, replica, `convoy_observer_pass_lateness_seconds{loop="drift"}`))
		oldest = max(oldest, metricFloat(t, replica, `convoy_observer_queue_oldest_seconds{loop="drift"}`))
	})
	t.Logf("b's new spec passed after %s; the loop's lateness at most %.1fs, the oldest waiting pass %.1fs; %d connections taken by the silent registry",
		time.Since(changed).Round(time.Millisecond), lateness, oldest, silent.taken())
	assert.Less(t, lateness, fetchTimeout.Seconds(), "the loop stays on time")
	assert.Less(t, oldest, fetchTimeout.Seconds(), "no pass waits for a worker as long as a hanging fetch")
	assert.Positive(t, metricFloat(t, replica, `convoy_observer_passes_parked{loop="drift"}`), "a's passes still wait for the registry, without a worker")
}

// logSize is the size of a replica's log now: where to read from.
func logSize(t *testing.T, p *controlplane.ConvoyProcess) int64 {
	t.Helper()
	info, err := os.Stat(p.LogFile())
	require.NoError(t, err)
	return info.Size()
}
