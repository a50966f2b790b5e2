package gitverify

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// kindOf is err's Kind, 0 when it is no *Error.
func kindOf(err error) Kind {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Kind
	}
	return 0
}

func TestVerifyCommit(t *testing.T) {
	alice := newPGP(t, "Alice", "alice@example.com")
	mallory := newPGP(t, "Mallory", "mallory@example.com")
	ed, ec, rs := newSSH(t, "ed25519"), newSSH(t, "ecdsa"), newSSH(t, "rsa")
	stranger := newSSH(t, "ed25519")
	keys := mustKeys(t, map[string][]byte{
		"alice.asc":       armoredPublic(t, alice),
		"ed.pub":          []byte(authorizedLine(ed) + " ed@laptop\n"),
		"allowed_signers": []byte("# team\nbob@example.com,robert@example.com " + authorizedLine(ec) + "\n\"carol smith\" namespaces=\"file,git\" " + authorizedLine(rs) + "\n"),
		"README":          []byte("not a key: not read"),
	})
	byAlice := func(p []byte) []byte { return signPGP(t, alice, p) }
	sshBy := func(key any, ns string) func([]byte) []byte {
		return func(p []byte) []byte {
			switch key {
			case "ed":
				return signSSH(t, ed, ns, p)
			case "ec":
				return signSSH(t, ec, ns, p)
			case "rsa":
				return signSSH(t, rs, ns, p)
			}
			return signSSH(t, stranger, ns, p)
		}
	}
	tampered := func(sign func([]byte) []byte) Object {
		// The signature of one message in a commit of another.
		sig := sign(commitPayload("deploy v1\n"))
		return object(typeCommit, withGPGSig(commitPayload("deploy v2, by someone else\n"), sig))
	}

	tests := []struct {
		name     string
		commit   Object
		want     *Signer
		kind     Kind
		contains []string
	}{
		{name: "OpenPGP", commit: signedCommit("deploy\n", byAlice),
			want: &Signer{Format: FormatOpenPGP, Fingerprint: fingerprint(alice.PrimaryKey.Fingerprint), KeyID: alice.PrimaryKey.KeyIdString(),
				Identity: "Alice <alice@example.com>", Key: "alice.asc"}},
		{name: "SSH ed25519 of a .pub", commit: signedCommit("deploy\n", sshBy("ed", "git")),
			want: &Signer{Format: FormatSSH, Fingerprint: sshFP(ed), Key: "ed.pub"}},
		{name: "SSH ECDSA of allowed_signers", commit: signedCommit("deploy\n", sshBy("ec", "git")),
			want: &Signer{Format: FormatSSH, Fingerprint: sshFP(ec), Identity: "bob@example.com,robert@example.com", Key: "allowed_signers"}},
		{name: "SSH RSA of allowed_signers, namespaces", commit: signedCommit("deploy\n", sshBy("rsa", "git")),
			want: &Signer{Format: FormatSSH, Fingerprint: sshFP(rs), Identity: "carol smith", Key: "allowed_signers"}},
		{name: "unsigned", commit: object(typeCommit, commitPayload("deploy\n")), kind: KindUnsigned, contains: []string{"is not signed"}},
		{name: "OpenPGP unknown key", commit: signedCommit("deploy\n", func(p []byte) []byte { return signPGP(t, mallory, p) }),
			kind: KindUnknownKey, contains: []string{fingerprint(mallory.PrimaryKey.Fingerprint), "not in the key Secret"}},
		{name: "SSH unknown key", commit: signedCommit("deploy\n", sshBy("stranger", "git")),
			kind: KindUnknownKey, contains: []string{sshFP(stranger), "ssh-ed25519"}},
		{name: "OpenPGP tampered", commit: tampered(byAlice), kind: KindBadSignature, contains: []string{"does not verify its content"}},
		{name: "SSH tampered", commit: tampered(sshBy("ed", "git")), kind: KindBadSignature, contains: []string{sshFP(ed), "does not verify its content"}},
		{name: "SSH of another namespace", commit: signedCommit("deploy\n", sshBy("ed", "file")), kind: KindBadSignature, contains: []string{`namespace "file"`}},
		{name: "malformed armor", commit: signedCommit("deploy\n", func([]byte) []byte {
			return []byte("-----BEGIN PGP SIGNATURE-----\n\nnot base64 at all!\n-----END PGP SIGNATURE-----\n")
		}), kind: KindMalformed, contains: []string{"does not parse"}},
		{name: "malformed SSH", commit: signedCommit("deploy\n", func([]byte) []byte {
			return []byte("-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n")
		}), kind: KindMalformed},
		{name: "two signatures", commit: signedCommit("deploy\n", func(p []byte) []byte {
			return append(signPGP(t, alice, p), signPGP(t, alice, p)...)
		}), kind: KindMalformed, contains: []string{"2 signature blocks"}},
		{name: "X.509", commit: signedCommit("deploy\n", func([]byte) []byte {
			return []byte("-----BEGIN SIGNED MESSAGE-----\nMIIB\n-----END SIGNED MESSAGE-----\n")
		}), kind: KindMalformed, contains: []string{"not supported"}},
		{name: "10 MiB signature block", commit: signedCommit("deploy\n", func(p []byte) []byte {
			return append(signPGP(t, alice, p), bytes.Repeat([]byte("A"), 10<<20)...)
		}), kind: KindTooLarge, contains: []string{"more than the limit of 65536 bytes"}},
		{name: "content not the id's", commit: Object{ID: strings.Repeat("a", 40), Data: commitPayload("x\n")}, kind: KindInvalid},
		{name: "not a SHA-1 id", commit: Object{ID: "abc", Data: commitPayload("x\n")}, kind: KindInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := VerifyCommit(tt.commit, keys)
			if tt.want != nil {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
				return
			}
			require.Error(t, err)
			assert.Nil(t, got)
			assert.Equal(t, tt.kind, kindOf(err), err.Error())
			t.Log(err)
			assert.NotContains(t, err.Error(), "\n")
			assert.LessOrEqual(t, len(err.Error()), maxMessage)
			for _, s := range tt.contains {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestVerifyCommitKeepsSHA256Signature(t *testing.T) {
	// A gpgsig-sha256 header (the signature of the SHA-256 form of a
	// commit) is neither the signature nor signed, as git reads it.
	alice := newPGP(t, "Alice", "alice@example.com")
	keys := mustKeys(t, map[string][]byte{"alice.asc": armoredPublic(t, alice)})
	p := commitPayload("deploy\n")
	signed := withGPGSig(p, signPGP(t, alice, p))
	header, message, _ := bytes.Cut(signed, []byte("\n\n"))
	data := []byte(string(header) + "\ngpgsig-sha256 -----BEGIN PGP SIGNATURE-----\n other\n -----END PGP SIGNATURE-----\n\n" + string(message))
	got, err := VerifyCommit(object(typeCommit, data), keys)
	require.NoError(t, err)
	assert.Equal(t, "Alice <alice@example.com>", got.Identity)
}

func TestVerifyTag(t *testing.T) {
	alice := newPGP(t, "Alice", "alice@example.com")
	ed := newSSH(t, "ed25519")
	keys := mustKeys(t, map[string][]byte{"alice.asc": armoredPublic(t, alice), "ed.pub": []byte(authorizedLine(ed))})
	commit := object(typeCommit, commitPayload("deploy\n")).ID

	got, err := VerifyTag(signedTag(commit, "v1", func(p []byte) []byte { return signPGP(t, alice, p) }), keys)
	require.NoError(t, err)
	assert.Equal(t, fingerprint(alice.PrimaryKey.Fingerprint), got.Fingerprint)

	got, err = VerifyTag(signedTag(commit, "v1", func(p []byte) []byte { return signSSH(t, ed, "git", p) }), keys)
	require.NoError(t, err)
	assert.Equal(t, sshFP(ed), got.Fingerprint)

	_, err = VerifyTag(signedTag(commit, "v1", nil), keys)
	assert.Equal(t, KindUnsigned, kindOf(err))
	assert.ErrorContains(t, err, "tag v1 (")

	// A commit's id given as a tag's is refused: the type is part of the id.
	_, err = VerifyTag(signedCommit("deploy\n", func(p []byte) []byte { return signPGP(t, alice, p) }), keys)
	assert.Equal(t, KindInvalid, kindOf(err))
}

// sshFP is the fingerprint of s as ssh-keygen -l prints it.
func sshFP(s ssh.Signer) string { return ssh.FingerprintSHA256(s.PublicKey()) }
