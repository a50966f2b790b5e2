package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// repositoryURL is where the repository's files are published; a runbook
// URL names a file of it.
const repositoryURL = "https://github.com/kumodo/convoy-apiserver/blob/main/"

// TestRunbookLinks: every alert of the shipped PrometheusRule has a
// runbook_url that names a file of this repository and a heading of it.
func TestRunbookLinks(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "artifacts/monitoring/prometheusrule.yaml"))
	require.NoError(t, err)
	var pr struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `json:"alert"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &pr))
	alerts := 0
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			url := r.Annotations["runbook_url"]
			path, ok := strings.CutPrefix(url, repositoryURL)
			if !assert.True(t, ok, "%s: runbook_url %q is not a file of %s", r.Alert, url, repositoryURL) {
				continue
			}
			file, fragment, _ := strings.Cut(path, "#")
			md, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
			if !assert.NoError(t, err, "%s: runbook_url names no file", r.Alert) {
				continue
			}
			assert.NotEmpty(t, fragment, "%s: runbook_url names no heading", r.Alert)
			assert.True(t, Anchors(string(md))[fragment], "%s: %s has no heading #%s", r.Alert, file, fragment)
		}
	}
	assert.Positive(t, alerts)
}
