//go:build unix

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy-apiserver/pkg/metricset"
)

// scrape gets /metrics of the convoy-apiserver the APIService points at with
// a bearer token, and returns the status code and, on 200, the metric
// families by name.
func scrape(t *testing.T, token string) (int, map[string]bool) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the replica's own serving certificate
	}}
	req, err := http.NewRequest(http.MethodGet, env.cp.ConvoyAPIServer().URL()+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	names := map[string]bool{}
	for name, f := range families {
		if len(f.GetMetric()) > 0 {
			names[name] = true
		}
	}
	return resp.StatusCode, names
}

// monitoringNames are the metric names of artifacts/monitoring's
// PrometheusRule and dashboard, as hack/tools/promql listed them.
func monitoringNames(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(env.root, "artifacts/monitoring/metric-names.txt"))
	require.NoError(t, err)
	defer f.Close()
	var names []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if line := strings.TrimSpace(s.Text()); line != "" && !strings.HasPrefix(line, "#") {
			names = append(names, line)
		}
	}
	require.NoError(t, s.Err())
	require.NotEmpty(t, names)
	return names
}

// TestMetricsForMonitoring: a Prometheus' ServiceAccount may scrape
// /metrics once the shipped ClusterRole convoy-apiserver:metrics-reader is
// bound to it (the kustomize base's binding, applied as it is), and not
// before; every metric the shipped alerts and dashboard use is exported by
// the running server and listed on docs/reference/metrics.md (which
// hack/gen-docs writes from what pkg/metricset declares, and its tests check
// against the server's registry).
func TestMetricsForMonitoring(t *testing.T) {
	// Not parallel: it binds a ClusterRole in the namespace monitoring and
	// scrapes the server's /metrics.
	ctx := context.Background()
	c := kubeClient(t)
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	_, err = c.CoreV1().ServiceAccounts("monitoring").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-k8s"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	tr, err := c.CoreV1().ServiceAccounts("monitoring").CreateToken(ctx, "prometheus-k8s", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	token := tr.Status.Token

	code, _ := scrape(t, token)
	assert.Equal(t, http.StatusForbidden, code, "without the ClusterRole's binding, /metrics is refused")

	shipped := filepath.Join(env.root, "artifacts/deploy/base/metrics-reader.yaml")
	mustKubectl(t, "", "", "apply", "--server-side", "-f", shipped)
	t.Cleanup(func() { mustKubectl(t, "", "", "delete", "--ignore-not-found", "-f", shipped) })

	// A Release with conditions, so that the per-Release series exist.
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n"})

	want := monitoringNames(t)
	var families map[string]bool
	eventually(t, "the leader exports every metric the alerts and the dashboard use", func(context.Context) error {
		code, families = scrape(t, token)
		if code != http.StatusOK {
			return fmt.Errorf("scraping /metrics: %d", code)
		}
		var missing []string
		for _, name := range want {
			if !families[familyOf(name, families)] {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("not exported: %s", strings.Join(missing, ", "))
		}
		return nil
	})

	page, err := os.ReadFile(filepath.Join(env.root, "docs/reference/metrics.md"))
	require.NoError(t, err)
	for _, name := range want {
		family := familyOf(name, families)
		if lib, ok := metricset.LibraryOf(family); ok {
			assert.Contains(t, string(page), "`"+lib.Prefix+"`", "%s: its library's prefix is on the metrics page", name)
			continue
		}
		assert.Regexp(t, regexp.MustCompile("(?m)^\\| `"+regexp.QuoteMeta(family)+"` \\|"), string(page), "%s is on docs/reference/metrics.md", family)
	}
}

// familyOf is the metric family of a name a query selects: a histogram's
// or summary's series (_bucket, _sum, _count) belong to the family without
// the suffix.
func familyOf(name string, families map[string]bool) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && families[base] {
			return base
		}
	}
	return name
}
