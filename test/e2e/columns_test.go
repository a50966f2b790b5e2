//go:build unix

package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// table splits kubectl's table output into its header and the row of name.
func table(t *testing.T, out, name string) (header, row []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.NotEmpty(t, lines, out)
	header = strings.Fields(lines[0])
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 && f[0] == name {
			return header, f
		}
	}
	require.Failf(t, "no row", "%s in\n%s", name, out)
	return nil, nil
}

func TestPrinterColumns(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	applied := newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	waitHealthy(t, ns, "web", metav1.ConditionTrue, "NotConfigured")

	header, row := table(t, mustKubectl(t, "", "", "get", "releases", "-n", ns), "web")
	assert.Equal(t, []string{"NAME", "INSYNC", "HEALTHY", "RENDER", "AGE"}, header)
	assert.Equal(t, []string{"web", "True", "True", applied.Ref}, row[:4])

	header, row = table(t, mustKubectl(t, "", "", "get", "releases", "-n", ns, "-o", "wide"), "web")
	assert.Equal(t, []string{"NAME", "INSYNC", "HEALTHY", "RENDER", "AGE", "SYNC-REASON", "HEALTH-REASON", "ROLLOUT"}, header)
	assert.Equal(t, []string{"InSync", "NotConfigured"}, row[5:7])

	// Empty cells print as nothing: nothing is Degraded or Progressing.
	header, row = table(t, mustKubectl(t, "", "", "get", "releaseinventories", "-n", ns), "web")
	assert.Equal(t, []string{"NAME", "DEGRADED", "PROGRESSING", "AGE"}, header)
	assert.Len(t, row, 2)

	header, _ = table(t, mustKubectl(t, "", "", "get", "globalhealthrulesets"), "convoy-default-apps")
	assert.Equal(t, []string{"NAME", "API-VERSIONS", "RESOURCES", "AGE"}, header)

	mustKubectl(t, "", "", "create", "secret", "generic", "-n", ns, "remote", "--from-literal=value=x")
	mustKubectl(t, "", `{"apiVersion":"convoy.kumodo.io/v1alpha1","kind":"Cluster","metadata":{"name":"remote"},"spec":{"kubeConfig":{"secretRef":{"name":"remote"}}}}`,
		"create", "-n", ns, "-f", "-")
	header, row = table(t, mustKubectl(t, "", "", "get", "clusters", "-n", ns), "remote")
	assert.Equal(t, []string{"NAME", "SECRET", "KEY", "AGE"}, header)
	assert.Equal(t, []string{"remote", "remote", "value"}, row[:3])
}
