package verify

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // Git's object ids.
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hiddeco/sshsig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/gitverify"
)

// gitKey is an SSH key that signs Git objects, as `ssh-keygen -Y sign -n
// git` does.
type gitKey struct{ signer ssh.Signer }

func newGitKey(t *testing.T) gitKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	s, err := ssh.NewSignerFromKey(k)
	require.NoError(t, err)
	return gitKey{signer: s}
}

// pub is the key as an authorized_keys line.
func (k gitKey) pub() []byte { return ssh.MarshalAuthorizedKey(k.signer.PublicKey()) }

func (k gitKey) fingerprint() string { return ssh.FingerprintSHA256(k.signer.PublicKey()) }

func (k gitKey) sign(t *testing.T, payload []byte) []byte {
	t.Helper()
	sig, err := sshsig.Sign(bytes.NewReader(payload), k.signer, sshsig.HashSHA512, "git")
	require.NoError(t, err)
	return sshsig.Armor(sig)
}

// gitObject is data as a Git object of kind, with its id.
func gitObject(kind string, data []byte) gitverify.Object {
	h := sha1.New() //nolint:gosec // Git's object ids.
	fmt.Fprintf(h, "%s %d\x00", kind, len(data))
	h.Write(data)
	return gitverify.Object{ID: hex.EncodeToString(h.Sum(nil)), Data: data}
}

// gitCommit is a commit with message, signed by key (nil: unsigned).
func gitCommit(t *testing.T, message string, key *gitKey) gitverify.Object {
	t.Helper()
	header := "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n" +
		"author Convoy Test <test@convoy.invalid> 1704067200 +0000\n" +
		"committer Convoy Test <test@convoy.invalid> 1704067200 +0000"
	body := "\n\n" + message + "\n"
	if key == nil {
		return gitObject("commit", []byte(header+body))
	}
	sig := strings.TrimSuffix(string(key.sign(t, []byte(header+body))), "\n")
	return gitObject("commit", []byte(header+"\ngpgsig "+strings.ReplaceAll(sig, "\n", "\n ")+body))
}

// gitTag is an annotated tag name of commit, signed by key (nil: unsigned).
func gitTag(t *testing.T, commit, name string, key *gitKey) *gitverify.Object {
	t.Helper()
	p := []byte("object " + commit + "\ntype commit\ntag " + name + "\ntagger Convoy Test <test@convoy.invalid> 1704067200 +0000\n\nrelease\n")
	if key != nil {
		p = append(p, key.sign(t, p)...)
	}
	o := gitObject("tag", p)
	return &o
}

// Each mode verifies what it names and gives the signatures it verified
// with; each failure is SignatureUnverified, with a message that names the
// commit and says what was expected and found, and is counted.
func TestVerifyGit(t *testing.T) {
	RegisterMetrics()
	ci, other := newGitKey(t), newGitKey(t)
	signed, unsigned := gitCommit(t, "signed", &ci), gitCommit(t, "unsigned", nil)
	byOther := gitCommit(t, "by another key", &other)
	tampered := signed
	tampered.Data = bytes.Replace(signed.Data, []byte("\n\nsigned\n"), []byte("\n\nsigned, then changed\n"), 1)
	tampered = gitObject("commit", tampered.Data)
	keys := map[string]map[string][]byte{"keys": {"ci.pub": ci.pub()}}
	tooMany := map[string][]byte{}
	for i := range 1000 {
		tooMany[fmt.Sprintf("k%d.pub", i)] = ci.pub()
	}
	keys["many"] = tooMany
	const where = "https://git.example/apps.git refs/tags/v1@COMMIT"
	for _, tc := range []struct {
		name      string
		mode      string
		secret    string
		commit    gitverify.Object
		tag       *gitverify.Object
		layout    string
		tagLayout string
		says      string
	}{
		{name: "HEAD signed", commit: signed, layout: "commit"},
		{name: "HEAD signed, mode named", mode: "HEAD", commit: signed, layout: "commit"},
		{name: "Tag signed", mode: "Tag", commit: unsigned, tag: gitTag(t, unsigned.ID, "v1", &ci), layout: "tag"},
		{name: "TagAndHEAD", mode: "TagAndHEAD", commit: signed, tag: gitTag(t, signed.ID, "v1", &ci), layout: "commit", tagLayout: "tag"},
		{name: "HEAD unsigned", commit: unsigned, says: "is not signed"},
		{name: "HEAD by an unknown key", commit: byOther, says: other.fingerprint()},
		{name: "HEAD tampered", commit: tampered, says: "commit " + tampered.ID + ": the SSH signature by " + ci.fingerprint() + " (key ci.pub of the Secret) does not verify its content"},
		{name: "Tag unsigned", mode: "Tag", commit: signed, tag: gitTag(t, signed.ID, "v1", nil), says: "is not signed"},
		{name: "Tag of a branch", mode: "Tag", commit: signed, says: "not an annotated tag"},
		{name: "TagAndHEAD, the tag on another commit", mode: "TagAndHEAD", commit: signed, tag: gitTag(t, unsigned.ID, "v1", &ci), says: "names the commit " + unsigned.ID},
		{name: "TagAndHEAD, the commit unsigned", mode: "TagAndHEAD", commit: unsigned, tag: gitTag(t, unsigned.ID, "v1", &ci), says: "is not signed"},
		{name: "no Secret", secret: "missing", commit: signed, says: "not found"},
		{name: "1,000 keys", secret: "many", commit: signed, says: "1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secret := tc.secret
			if secret == "" {
				secret = "keys"
			}
			f := &fetcher{secrets: keys}
			spec := &convoyv1alpha1.GitVerification{Mode: tc.mode, SecretRef: convoyv1alpha1.LocalObjectReference{Name: secret}}
			target := GitTarget{Namespace: "shop", URL: "https://git.example/apps.git", Ref: "refs/tags/v1", Commit: tc.commit, Tag: tc.tag, Where: where}
			outcome := verifyVerified
			if tc.says != "" {
				outcome = verifyUnverified
			}
			before := providerCount(t, ProviderGit, outcome)
			got, err := New(Options{MaxAge: time.Minute}).VerifyGit(context.Background(), f, target, spec)
			assert.Equal(t, before+1, providerCount(t, ProviderGit, outcome))
			if tc.says != "" {
				ferr, ok := failure.As(err)
				require.True(t, ok, "%v", err)
				assert.Equal(t, ReasonSignatureUnverified, ferr.Reason)
				assert.Contains(t, ferr.Message, where)
				assert.Contains(t, ferr.Message, tc.says)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, got.Verified)
			assert.Equal(t, ProviderGit, got.Verified.Provider)
			assert.Equal(t, gitverify.FormatSSH, got.Verified.Format)
			assert.Equal(t, "ci.pub", got.Verified.Key)
			assert.Equal(t, ci.fingerprint(), got.Verified.Fingerprint)
			assert.Equal(t, tc.layout, got.Verified.Layout)
			if tc.tagLayout == "" {
				assert.Nil(t, got.VerifiedTag)
				return
			}
			require.NotNil(t, got.VerifiedTag)
			assert.Equal(t, tc.tagLayout, got.VerifiedTag.Layout)
		})
	}
}

// A verdict is kept by namespace, repository, ref, commit, tag, mode and
// key set: another namespace or another key set verifies again (and a key
// set that did not sign is refused, whatever was verified before); a
// SignatureUnverified is kept for UnverifiedMaxAge, unless a refresh asks
// for a fresher one.
func TestVerifyGitVerdictKeys(t *testing.T) {
	ci, other := newGitKey(t), newGitKey(t)
	signed, unsigned := gitCommit(t, "signed", &ci), gitCommit(t, "unsigned", nil)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	v := New(Options{MaxAge: time.Hour, Clock: clk})
	f := &fetcher{secrets: map[string]map[string][]byte{"keys": {"ci.pub": ci.pub()}, "others": {"other.pub": other.pub()}}}
	ctx := context.Background()
	spec := func(secret, mode string) *convoyv1alpha1.GitVerification {
		return &convoyv1alpha1.GitVerification{Mode: mode, SecretRef: convoyv1alpha1.LocalObjectReference{Name: secret}}
	}
	target := func(ns string, c gitverify.Object) GitTarget {
		return GitTarget{Namespace: ns, URL: "https://git.example/apps.git", Ref: "refs/heads/main", Commit: c, Where: "apps"}
	}
	check := func(ns, secret, mode string, c gitverify.Object, checked bool, ok bool) {
		t.Helper()
		before := f.shared
		_, err := v.VerifyGit(ctx, f, target(ns, c), spec(secret, mode))
		if ok {
			require.NoError(t, err)
		} else {
			assert.Equal(t, ReasonSignatureUnverified, failure.ReasonOf(err), "%v", err)
		}
		if checked {
			assert.Equal(t, before+1, f.shared, "checked")
		} else {
			assert.Equal(t, before, f.shared, "the verdict kept")
		}
	}
	check("shop", "keys", "", signed, true, true)
	check("shop", "keys", "", signed, false, true)
	check("shop", "keys", "HEAD", signed, false, true) // the default mode is HEAD
	check("other", "keys", "", signed, true, true)
	check("shop", "others", "", signed, true, false)
	check("shop", "others", "", signed, false, false)
	check("shop", "keys", "Tag", signed, true, false)
	check("shop", "keys", "", unsigned, true, false)
	check("shop", "keys", "", unsigned, false, false)
	// A refresh asks again.
	before := f.shared
	_, err := v.VerifyGit(ctx, f, GitTarget{Namespace: "shop", URL: "https://git.example/apps.git", Ref: "refs/heads/main", Commit: unsigned, Where: "apps", Since: clk.Now().Add(time.Second)}, spec("keys", ""))
	assert.Equal(t, ReasonSignatureUnverified, failure.ReasonOf(err))
	assert.Equal(t, before+1, f.shared)
	clk.SetTime(clk.Now().Add(UnverifiedMaxAge + time.Second))
	check("shop", "keys", "", unsigned, true, false)
	check("shop", "keys", "", signed, false, true)
	clk.SetTime(clk.Now().Add(time.Hour))
	check("shop", "keys", "", signed, true, true)
}
