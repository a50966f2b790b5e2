package gitserver

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EndlessRefs writes to dir, and returns the path of, a program to serve as
// git-upload-pack (SSHOptions.UploadPack): a hostile server that advertises
// refs without end, each named by nameLen bytes and a counter (no two the
// same, so that a client that keeps them keeps them all), until its client
// goes away.
func EndlessRefs(dir string, nameLen int) (string, error) {
	const oid = "0123456789abcdef0123456789abcdef01234567"
	first := oid + " refs/heads/main\x00multi_ack ofs-delta side-band-64k\n"
	// The oid, a space, refs/heads/, the name, ten digits, a newline.
	lineLen := 4 + len(oid) + 1 + len("refs/heads/") + nameLen + 10 + 1
	if lineLen > 65520 {
		return "", fmt.Errorf("gitserver: a name of %d bytes makes a line longer than a pkt-line's longest", nameLen)
	}
	script := fmt.Sprintf(`#!/bin/sh
printf '%04x%s'
name=$(printf '%%0%dd' 0)
i=0
while :; do
	i=$((i+1))
	printf '%04x%%s refs/heads/%%s%%010d\n' %s "$name" "$i" || exit 0
done
`, 4+len(first), strings.ReplaceAll(strings.ReplaceAll(first, "\x00", `\000`), "\n", `\n`), nameLen, lineLen, oid)
	path := filepath.Join(dir, "endless-refs")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return "", err
	}
	return path, nil
}
