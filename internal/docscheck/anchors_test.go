package docscheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Install", "install"},
		{"Drift and drift explained", "drift-and-drift-explained"},
		{"kubectl convoy release health", "kubectl-convoy-release-health"},
		{"SourceNotFound", "sourcenotfound"},
		{"What's built, and what is not?", "whats-built-and-what-is-not"},
		{"`--max-render-bytes` and limits", "--max-render-bytes-and-limits"},
		{"snake_case_name", "snake_case_name"},
		{"A -- B", "a----b"},
		{"Sources: OCI & Helm (v1)", "sources-oci--helm-v1"},
		{"[The plugin](docs/plugin.md)", "the-plugin"},
		{"Caches <small>and sizes</small>", "caches-and-sizes"},
		{"  Spaces around  ", "spaces-around"},
		{"Émile's café 2", "émiles-café-2"},
		{"1.2.3 → 2.0", "123--20"},
	} {
		t.Run(tc.heading, func(t *testing.T) {
			assert.Equal(t, tc.want, Slug(tc.heading))
		})
	}
}

func TestAnchors(t *testing.T) {
	page := "# Title\n\n## Usage\n\ntext\n\n## Usage\n\n### Usage ###\n\n" +
		"```sh\n# not a heading\n```\n\n" +
		"#not-a-heading\n\n    # indented code\n\n" +
		"<a id=\"custom\"></a>\n<a name='old-name'>x</a>\n"
	assert.Equal(t, map[string]bool{
		"title": true, "usage": true, "usage-1": true, "usage-2": true,
		"custom": true, "old-name": true,
	}, Anchors(page))
}
