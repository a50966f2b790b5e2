package health

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// casesDir holds, for a default rule set artifacts/rules/NAME.yaml, its
// cases in NAME.yaml: objects as their controllers write them and what the
// default rules say of them.
const casesDir = "testdata/rules"

// ruleCase is one case of a file of casesDir.
type ruleCase struct {
	// Name says what the object shows.
	Name string `json:"name"`
	// Source says where the object comes from: the upstream project's
	// documentation, tests or source (a URL), or a cluster (which one).
	Source string `json:"source"`
	// State is Healthy, Progressing or Suspended (never Unknown: the rules
	// guard every field they read).
	State convoyv1alpha1.HealthState `json:"state"`
	// Message is the message of the first failing rule; empty for Healthy.
	Message string `json:"message,omitempty"`
	// Object is the live object.
	Object map[string]any `json:"object"`
}

// loadCases reads the cases of every default rule set from casesDir, and
// fails when a set has none.
func loadCases(t testing.TB) map[string][]ruleCase {
	t.Helper()
	files, _ := loadDefaults(t)
	out := map[string][]ruleCase{}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(casesDir, f))
		require.NoError(t, err, "every default rule set has its cases in %s/%s", casesDir, f)
		var cases []ruleCase
		require.NoError(t, yaml.UnmarshalStrict(data, &cases), f)
		require.NotEmpty(t, cases, f)
		for i, c := range cases {
			require.NotEmpty(t, c.Name, "%s case %d has no name", f, i)
			require.NotEmpty(t, strings.TrimSpace(c.Source), "%s case %q says not where its object comes from", f, c.Name)
			require.Contains(t, []convoyv1alpha1.HealthState{convoyv1alpha1.HealthHealthy, convoyv1alpha1.HealthProgressing, convoyv1alpha1.HealthSuspended},
				c.State, "%s case %q", f, c.Name)
			if c.State != convoyv1alpha1.HealthHealthy {
				require.NotEmpty(t, c.Message, "%s case %q is not Healthy: say its message", f, c.Name)
			}
			require.NotEmpty(t, c.Object, "%s case %q", f, c.Name)
			// Integers as the API machinery decodes them (int64).
			j, err := yaml.Marshal(c.Object)
			require.NoError(t, err)
			cases[i].Object = object(t, string(j))
		}
		out[f] = cases
	}
	return out
}

// resultOf is the verdict a case wants.
func resultOf(state convoyv1alpha1.HealthState) Result {
	switch state {
	case convoyv1alpha1.HealthHealthy:
		return ResultPass
	case convoyv1alpha1.HealthSuspended:
		return ResultSuspended
	}
	return ResultFail
}
