package docscheck

import (
	"bufio"
	"net/url"
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

// anchorsOf returns the anchors of the Markdown file path, reading it once.
func anchorsOf(t *testing.T, cache map[string]map[string]bool, path string) map[string]bool {
	t.Helper()
	if a, ok := cache[path]; ok {
		return a
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	cache[path] = Anchors(string(data))
	return cache[path]
}

func TestMarkdown(t *testing.T) {
	anchors := map[string]map[string]bool{}
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
					file, fragment, _ := strings.Cut(target, "#")
					resolved := path
					if file != "" {
						assert.NotRegexp(t, `^[a-z]+:`, target, "line %d: the link %s leaves the repository", n, target)
						resolved = filepath.Join(filepath.Dir(path), file)
						root, _ := filepath.Abs("../..")
						if !assert.True(t, strings.HasPrefix(resolved, root), "line %d: the link %s leaves the repository", n, target) {
							continue
						}
						if _, err := os.Stat(resolved); !assert.NoError(t, err, "line %d: the link %s names no file", n, target) {
							continue
						}
					}
					if fragment == "" || !strings.HasSuffix(resolved, ".md") {
						continue
					}
					if unescaped, err := url.PathUnescape(fragment); err == nil {
						fragment = unescaped
					}
					assert.True(t, anchorsOf(t, anchors, resolved)[fragment], "line %d: the link %s names no heading or anchor of %s", n, target, filepath.Base(resolved))
				}
			}
			require.NoError(t, s.Err())
			assert.False(t, open, "the fence opened at line %d never closes", openedAt)
		})
	}
}
