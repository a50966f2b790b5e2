package gitserver

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The program's first lines are the pkt-lines of an advertisement: the
// first ref with the capabilities, then refs of names no two alike.
func TestEndlessRefsScript(t *testing.T) {
	path, err := EndlessRefs(t.TempDir(), 16)
	require.NoError(t, err)
	cmd := exec.Command(path)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	head := make([]byte, 4096)
	_, err = io.ReadFull(out, head)
	require.NoError(t, err)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	const oid = "0123456789abcdef0123456789abcdef01234567"
	first := oid + " refs/heads/main\x00multi_ack ofs-delta side-band-64k\n"
	assert.True(t, bytes.HasPrefix(head, fmt.Appendf(nil, "%04x%s", 4+len(first), first)), "%q", head[:100])
	for _, n := range []int{1, 2, 10} {
		line := fmt.Sprintf("%s refs/heads/%s%010d\n", oid, strings.Repeat("0", 16), n)
		assert.Contains(t, string(head), fmt.Sprintf("%04x%s", 4+len(line), line))
	}
}
