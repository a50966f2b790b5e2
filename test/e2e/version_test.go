//go:build unix

package e2e

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kumodo/convoy-apiserver/pkg/version"
)

func TestPluginVersion(t *testing.T) {
	t.Parallel()
	// The aggregator downloads the OpenAPI of the group in the background.
	eventually(t, "the server version through the aggregator", func(context.Context) error {
		r := kubectlConvoy(t, "", "version")
		if r.code != 0 {
			return fmt.Errorf("%s", r)
		}
		want := "Client Version: " + pluginVersion + " (commit e2e, built unknown, " + runtime.Version()
		for _, line := range []string{want, "convoy-apiserver Version: " + serverVersion + "\n", "Kubernetes Version: v1.37.2\n"} {
			if !strings.Contains(r.stdout, line) {
				return fmt.Errorf("no %q in\n%s", line, r.stdout)
			}
		}
		return nil
	})

	var v struct {
		ClientVersion     version.Info `json:"clientVersion"`
		ServerVersion     string       `json:"serverVersion"`
		KubernetesVersion string       `json:"kubernetesVersion"`
	}
	r := kubectlConvoy(t, "", "version", "-o", "json")
	require.Equal(t, 0, r.code, r)
	unmarshal(t, r.stdout, &v)
	assert.Equal(t, pluginVersion, v.ClientVersion.GitVersion)
	assert.Equal(t, serverVersion, v.ServerVersion)
	assert.Equal(t, "v1.37.2", v.KubernetesVersion)

	// --client makes no request: a kubeconfig of an unreachable server works.
	r = kubectlConvoy(t, "", "version", "--client", "--server", "https://127.0.0.1:1")
	require.Equal(t, 0, r.code, r)
	assert.Contains(t, r.stdout, "Client Version: "+pluginVersion)
	assert.NotContains(t, r.stdout, "convoy-apiserver Version")
	// Without --client, an unreachable server is an error (exit 1).
	r = kubectlConvoy(t, "", "version", "--server", "https://127.0.0.1:1")
	assert.Equal(t, 1, r.code, r)
}

func TestMetricsReleaseConditionAndBuildInfo(t *testing.T) {
	// Not parallel: it reads the server's /metrics.
	ns := newNamespace(t)
	newDriftRelease(t, ns, "web", webManifests("blue", "1.0"))
	waitInSync(t, ns, "web", metav1.ConditionFalse, "Drifted")
	p := env.cp.ConvoyAPIServer()

	// The series come from the loops' informer cache, which may see the
	// condition written a moment after the Release client does.
	seriesIs := func(series, want string) {
		t.Helper()
		eventually(t, series+" = "+want, func(context.Context) error {
			if v := metric(t, p, series); v != want {
				return fmt.Errorf("%s is %q", series, v)
			}
			return nil
		})
	}
	series := fmt.Sprintf(`convoy_release_condition{name="web",namespace="%s",reason="Drifted",status="False",type="InSync"}`, ns)
	seriesIs(series, "1")
	assert.Equal(t, "1", metric(t, p, fmt.Sprintf(`convoy_build_info{git_commit="e2e",go_version="%s",version="%s"}`, runtime.Version(), serverVersion)))

	newStandIn(t).apply(ns, "web")
	waitInSync(t, ns, "web", metav1.ConditionTrue, "InSync")
	// The series follow the condition: the old one is gone.
	seriesIs(series, "")
	seriesIs(fmt.Sprintf(`convoy_release_condition{name="web",namespace="%s",reason="InSync",status="True",type="InSync"}`, ns), "1")

	require.NoError(t, convoyClient(t).ConvoyV1alpha1().Releases(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}))
	eventually(t, "no series of a deleted Release", func(context.Context) error {
		if v := metric(t, p, fmt.Sprintf(`convoy_release_condition{name="web",namespace="%s",reason="InSync",status="True",type="InSync"}`, ns)); v != "" {
			return fmt.Errorf("still reported: %s", v)
		}
		return nil
	})
}
