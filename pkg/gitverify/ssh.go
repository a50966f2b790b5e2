package gitverify

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// sshNamespace is the namespace of Git's SSH signatures (`ssh-keygen -Y
// sign -n git`).
const sshNamespace = "git"

// addSSH adds the SSH public keys of value, one a line; blank lines and
// lines starting with # are skipped. Lines of the key AllowedSigners start
// with the principals (allowed_signers); those of a key ending in .pub do
// not (authorized_keys, what ssh-keygen writes in id_ed25519.pub). left is
// how many keys the limit still allows: the lines are counted before any
// is parsed.
func (k *Keys) addSSH(name string, value []byte, left int) (int, error) {
	var lines []string
	for line := range strings.Lines(string(value)) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	if len(lines) > left {
		return 0, errorf(KindInvalidKeys, nil, "the key Secret holds more than the limit of %d public keys (key %s lists %d)", k.limits.Keys, name, len(lines))
	}
	if len(lines) == 0 {
		return 0, errorf(KindInvalidKeys, nil, "key %s of the Secret lists no SSH public key", name)
	}
	for i, line := range lines {
		key, err := parseSSHLine(line, name == AllowedSigners)
		if err != nil {
			return 0, errorf(KindInvalidKeys, err, "key %s of the Secret, key %d", name, i+1)
		}
		if key == nil {
			continue // not for the namespace git
		}
		key.source = name
		fp := ssh.FingerprintSHA256(key.key)
		k.ssh[fp] = append(k.ssh[fp], *key)
	}
	return len(lines), nil
}

// parseSSHLine parses one line; nil when its namespaces option leaves out
// git.
func parseSSHLine(line string, principals bool) (*sshKey, error) {
	var who string
	if principals {
		who, line = cutField(line)
		if line == "" {
			return nil, fmt.Errorf("an allowed_signers line is \"principal[,...] [options] keytype base64\"")
		}
	}
	pub, _, options, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return nil, err
	}
	for _, opt := range options {
		name, value, _ := strings.Cut(opt, "=")
		switch strings.ToLower(name) {
		case "namespaces":
			if !matchesNamespace(strings.Trim(value, `"`)) {
				return nil, nil
			}
		case "cert-authority", "valid-after", "valid-before":
			return nil, fmt.Errorf("option %s is not supported (certificates and validity times are not verified)", name)
		}
	}
	return &sshKey{key: pub, principals: strings.Trim(who, `"`)}, nil
}

// matchesNamespace tells whether a namespaces option's pattern list
// ("git,file", "*") allows git.
func matchesNamespace(patterns string) bool {
	for p := range strings.SplitSeq(patterns, ",") {
		if ok, _ := path.Match(p, sshNamespace); ok {
			return true
		}
	}
	return false
}

// cutField cuts the first field of line, double quotes keeping spaces in
// it, and returns it and the rest, trimmed.
func cutField(line string) (string, string) {
	quoted := false
	for i, r := range line {
		switch {
		case r == '"':
			quoted = !quoted
		case (r == ' ' || r == '\t') && !quoted:
			return line[:i], strings.TrimSpace(line[i:])
		}
	}
	return line, ""
}

// verifySSH verifies an SSH signature (SSHSIG, namespace git) of payload
// with the SSH keys of k.
func (k *Keys) verifySSH(what string, payload, block []byte) (*Signer, error) {
	sig, err := sshsig.Unarmor(block)
	if err != nil {
		return nil, errorf(KindMalformed, err, "%s: the SSH signature does not parse", what)
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	keys := k.ssh[fp]
	if len(keys) == 0 {
		return nil, errorf(KindUnknownKey, nil, "%s is signed by the SSH key %s (%s), which is not in the key Secret (%d keys)",
			what, fp, sig.PublicKey.Type(), k.Len())
	}
	if sig.Namespace != sshNamespace {
		return nil, errorf(KindBadSignature, nil, "%s: the SSH signature by %s is of the namespace %q, not %q", what, fp, sig.Namespace, sshNamespace)
	}
	key := keys[0]
	if err := sshsig.Verify(bytes.NewReader(payload), sig, key.key, sig.HashAlgorithm, sshNamespace); err != nil {
		return nil, errorf(KindBadSignature, err, "%s: the SSH signature by %s (key %s of the Secret) does not verify its content", what, fp, key.source)
	}
	return &Signer{Format: FormatSSH, Fingerprint: fp, Identity: key.principals, Key: key.source}, nil
}
