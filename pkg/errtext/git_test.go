package errtext

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// git's own git-upload-pack, on a missing directory and on a directory that
// is not a repository, says so on its standard error; on a repository it
// answers, and an error of another kind is not a missing repository.
func TestGitRepositoryNotFound(t *testing.T) {
	dir := t.TempDir()
	stderrOf := func(t *testing.T, path string) string {
		t.Helper()
		var stderr bytes.Buffer
		cmd := exec.Command("git-upload-pack", path)
		cmd.Stdin, cmd.Stderr = bytes.NewReader(nil), &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, 128, exit.ExitCode())
		return stderr.String()
	}
	assert.True(t, GitRepositoryNotFound(stderrOf(t, filepath.Join(dir, "missing.git"))))
	assert.True(t, GitRepositoryNotFound(stderrOf(t, dir)))

	for text, want := range map[string]bool{
		"ERROR: Repository not found.\n": true,
		"remote: The project you were looking for could not be found or you don't have permission to view it.": true,
		"Forbidden\nfatal: Could not read from remote repository.":                                             false,
		"fatal: the remote end hung up unexpectedly":                                                           false,
		"": false,
	} {
		assert.Equal(t, want, GitRepositoryNotFound(text), text)
	}
}
