package gitverify

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzSplit: splitting any object never panics; a tag's payload and
// signature are the object; a commit without a gpgsig header is its own
// payload, and a payload is never longer than the object.
func FuzzSplit(f *testing.F) {
	f.Add([]byte("tree x\ngpgsig -----BEGIN PGP SIGNATURE-----\n abc\n -----END PGP SIGNATURE-----\n\nmsg\n"))
	f.Add([]byte("object x\ntype commit\ntag v1\n\nmsg\n-----BEGIN SSH SIGNATURE-----\nabc\n-----END SSH SIGNATURE-----\n"))
	f.Add([]byte("gpgsig-sha256 a\n b\ngpgsig c\n d\n\n gpgsig e"))
	f.Add([]byte("\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tag := splitTag(data)
		assert.Equal(t, data, append(append([]byte{}, tag.payload...), tag.signature...))
		commit := splitCommit(data)
		assert.LessOrEqual(t, len(commit.payload), len(data))
		if !bytes.Contains(data, []byte("gpgsig")) {
			assert.Equal(t, data, commit.payload)
			assert.Empty(t, commit.signature)
		}
		_ = parseTagHeader(data)
		_ = countBlocks(data)
	})
}

// FuzzParseSSHLine: a line of a key Secret never panics the parser.
func FuzzParseSSHLine(f *testing.F) {
	f.Add("alice@x namespaces=\"git\" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEv6mQ0Y6v9Q5bPBQ3KbJmJ9mB4bE3b8hJ0oYt4pZ1rM c", true)
	f.Add("\"a b\" ssh-rsa AAAA", true)
	f.Add("restrict ssh-ed25519 AAAA", false)
	f.Fuzz(func(t *testing.T, line string, principals bool) {
		_, _ = parseSSHLine(line, principals)
	})
}

// FuzzVerifyCommit: any content, under its own id, verifies or fails with
// a Kind and a one-line message; it never panics.
func FuzzVerifyCommit(f *testing.F) {
	alice := newPGP(f, "Alice", "alice@example.com")
	ed := newSSH(f, "ed25519")
	keys := mustKeys(f, map[string][]byte{"alice.asc": armoredPublic(f, alice), "ed.pub": []byte(authorizedLine(ed))})
	f.Add(signedCommit("deploy\n", func(p []byte) []byte { return signPGP(f, alice, p) }).Data)
	f.Add(signedCommit("deploy\n", func(p []byte) []byte { return signSSH(f, ed, "git", p) }).Data)
	f.Add(commitPayload("deploy\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		o := object(typeCommit, data)
		signer, err := VerifyCommit(o, keys)
		if err != nil {
			require.Nil(t, signer)
			k := kindOf(err)
			require.NotZero(t, k, "%v", err)
			assert.NotContains(t, err.Error(), "\n")
			return
		}
		require.NotNil(t, signer)
		assert.NotEmpty(t, signer.Fingerprint)
	})
}
