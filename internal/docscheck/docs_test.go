// Package docscheck checks the Markdown of the repository: every code fence
// closes, and no link leaves the repository (a relative link names a file
// that exists).
package docscheck

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

func markdownFiles(t *testing.T) []string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	var files []string
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	}))
	require.NotEmpty(t, files)
	return files
}

func TestMarkdown(t *testing.T) {
	for _, path := range markdownFiles(t) {
		t.Run(filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), func(t *testing.T) {
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			open, openedAt := false, 0
			s := bufio.NewScanner(f)
			s.Buffer(make([]byte, 1<<20), 1<<20)
			for n := 1; s.Scan(); n++ {
				line := s.Text()
				trimmed := strings.TrimSpace(line)
				if strings.HasPrefix(trimmed, "```") {
					if open {
						assert.Equal(t, "```", trimmed, "line %d: a fence closes with ``` alone", n)
						open = false
					} else {
						open, openedAt = true, n
					}
					continue
				}
				assert.False(t, !open && strings.Contains(line, "```"), "line %d: ``` inside a line: %q", n, line)
				if open {
					continue
				}
				for _, m := range link.FindAllStringSubmatch(line, -1) {
					target := m[1]
					if strings.HasPrefix(target, "#") {
						continue
					}
					assert.NotRegexp(t, `^[a-z]+:`, target, "line %d: the link %s leaves the repository", n, target)
					file := strings.SplitN(target, "#", 2)[0]
					resolved := filepath.Join(filepath.Dir(path), file)
					root, _ := filepath.Abs("../..")
					assert.True(t, strings.HasPrefix(resolved, root), "line %d: the link %s leaves the repository", n, target)
					_, err := os.Stat(resolved)
					assert.NoError(t, err, "line %d: the link %s names no file", n, target)
				}
			}
			require.NoError(t, s.Err())
			assert.False(t, open, "the fence opened at line %d never closes", openedAt)
		})
	}
}
