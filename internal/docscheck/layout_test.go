package docscheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The layout in docs/contributors/internals.md names every directory of Go
// code, each on a line of its own but under the parents it lists for them
// all (parents), and names nothing that is gone: a package added without a
// line there, or a line left for a package removed, fails here.
func TestLayoutNamesEveryPackage(t *testing.T) {
	// parents are the lines that stand for every package under them: the
	// tools, the generated code, the embedded artifacts.
	parents := []string{"hack/", "pkg/generated/", "artifacts/"}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "docs/contributors/internals.md"))
	require.NoError(t, err)
	text := string(data)
	start := strings.Index(text, "## Layout\n")
	require.GreaterOrEqual(t, start, 0, "internals.md has a Layout section")
	block := text[start:]
	open := strings.Index(block, "```\n")
	require.GreaterOrEqual(t, open, 0)
	block = block[open+4:]
	block = block[:strings.Index(block, "```")]
	var listed []string
	for line := range strings.Lines(block) {
		if entry, _, _ := strings.Cut(strings.TrimSpace(line), " "); strings.HasSuffix(entry, "/") {
			listed = append(listed, entry)
			_, err := os.Stat(filepath.Join(root, entry))
			assert.NoError(t, err, "the layout lists %s, which is not in the repository", entry)
		}
	}
	require.NotEmpty(t, listed)

	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil || dir == "." {
			return err
		}
		dir = filepath.ToSlash(dir) + "/"
		covered := slices.Contains(listed, dir)
		for _, parent := range parents {
			covered = covered || (strings.HasPrefix(dir, parent) && slices.Contains(listed, parent))
		}
		assert.True(t, covered, "internals.md's layout does not name %s on a line of its own", dir)
		return nil
	}))
}
