package gosrc

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFuzzTargetsRunByMakeFuzz checks that hack/fuzz.sh lists every native
// fuzz target of the repository (./DIR:FuzzName), and only those: a target
// left out would never run in CI.
func TestFuzzTargetsRunByMakeFuzz(t *testing.T) {
	root := filepath.Join("..", "..")
	script, err := os.ReadFile(filepath.Join(root, "hack", "fuzz.sh"))
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`\./([A-Za-z0-9_./-]+):(Fuzz[A-Za-z0-9_]*)`).FindAllStringSubmatch(string(script), -1) {
		listed[m[1]+":"+m[2]] = true
	}
	require.NotEmpty(t, listed, "hack/fuzz.sh lists its targets as ./DIR:FuzzName")

	declared := map[string]bool{}
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz[A-Za-z0-9_]*)\(\w+ \*testing\.F\)`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, "_test.go"):
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(data), -1) {
			declared[filepath.ToSlash(dir)+":"+m[1]] = true
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, declared)
	for target := range declared {
		assert.True(t, listed[target], "hack/fuzz.sh does not run ./%s", target)
	}
	for target := range listed {
		assert.True(t, declared[target], "hack/fuzz.sh lists ./%s, which no test declares", target)
	}
}
