package gitverify

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	alice := newPGP(t, "Alice", "alice@example.com")
	ed := newSSH(t, "ed25519")
	keys := mustKeys(t, map[string][]byte{"alice.asc": armoredPublic(t, alice), "ed.pub": []byte(authorizedLine(ed))})
	byAlice := func(p []byte) []byte { return signPGP(t, alice, p) }
	bySSH := func(p []byte) []byte { return signSSH(t, ed, "git", p) }

	signed := signedCommit("deploy\n", byAlice)
	unsigned := object(typeCommit, commitPayload("deploy\n"))
	other := signedCommit("another\n", byAlice)
	tagOf := func(commit Object, sign func([]byte) []byte) *Object {
		o := signedTag(commit.ID, "v1", sign)
		return &o
	}
	tagOfTag := object(typeTag, []byte("object "+tagOf(signed, nil).ID+"\ntype tag\ntag v1-again\n"+
		"tagger Convoy Test <test@convoy.invalid> 1704067200 +0000\n\nagain\n"))

	tests := []struct {
		name     string
		mode     Mode
		target   Target
		commit   bool // the verdict names the commit's signer
		tag      bool // and the tag's
		kind     Kind
		contains string
	}{
		{name: "HEAD signed", mode: ModeHEAD, target: Target{Ref: "refs/heads/main", Commit: signed}, commit: true},
		{name: "HEAD unsigned", mode: ModeHEAD, target: Target{Ref: "refs/heads/main", Commit: unsigned}, kind: KindUnsigned},
		{name: "HEAD ignores the tag", mode: ModeHEAD, target: Target{Ref: "refs/tags/v1", Commit: signed, Tag: tagOf(signed, nil)}, commit: true},
		{name: "Tag signed, the commit unsigned", mode: ModeTag, target: Target{Ref: "refs/tags/v1", Commit: unsigned, Tag: tagOf(unsigned, bySSH)}, tag: true},
		{name: "Tag unsigned", mode: ModeTag, target: Target{Ref: "refs/tags/v1", Commit: signed, Tag: tagOf(signed, nil)}, kind: KindUnsigned,
			contains: "tag v1 ("},
		{name: "Tag of a lightweight tag", mode: ModeTag, target: Target{Ref: "refs/tags/v1", Commit: signed}, kind: KindNotAnnotatedTag,
			contains: "refs/tags/v1 is a lightweight tag, not an annotated tag"},
		{name: "Tag of a branch", mode: ModeTag, target: Target{Ref: "refs/heads/main", Commit: signed}, kind: KindNotAnnotatedTag,
			contains: "refs/heads/main is a branch or another ref"},
		{name: "Tag of a commit", mode: ModeTag, target: Target{Commit: signed}, kind: KindNotAnnotatedTag, contains: "is a commit"},
		{name: "Tag of a tag", mode: ModeTag, target: Target{Ref: "refs/tags/v1-again", Commit: signed, Tag: &tagOfTag}, kind: KindTagNotOnCommit,
			contains: "an annotated tag of a tag"},
		{name: "Tag on another commit", mode: ModeTag, target: Target{Ref: "refs/tags/v1", Commit: signed, Tag: tagOf(other, bySSH)},
			kind: KindTagNotOnCommit, contains: "verify mode Tag: the tag refs/tags/v1 names the commit " + other.ID},
		{name: "Tag of another name", mode: ModeTag, target: Target{Ref: "refs/tags/v9", Commit: signed, Tag: tagOf(signed, bySSH)},
			kind: KindTagNotOnCommit, contains: `of the tag "v1", not of the tag "v9"`},
		{name: "TagAndHEAD", mode: ModeTagAndHEAD, target: Target{Ref: "refs/tags/v1", Commit: signed, Tag: tagOf(signed, bySSH)}, commit: true, tag: true},
		{name: "TagAndHEAD, the commit unsigned", mode: ModeTagAndHEAD, target: Target{Ref: "refs/tags/v1", Commit: unsigned, Tag: tagOf(unsigned, bySSH)},
			kind: KindUnsigned, contains: "commit " + unsigned.ID},
		{name: "TagAndHEAD, the tag unsigned", mode: ModeTagAndHEAD, target: Target{Ref: "refs/tags/v1", Commit: signed, Tag: tagOf(signed, nil)}, kind: KindUnsigned},
		{name: "TagAndHEAD, the tag on another commit", mode: ModeTagAndHEAD,
			target: Target{Ref: "refs/tags/v1", Commit: signed, Tag: tagOf(other, bySSH)}, kind: KindTagNotOnCommit,
			contains: "names the commit " + other.ID + ", not the commit " + signed.ID},
		{name: "an unknown mode", mode: "head", target: Target{Commit: signed}, kind: KindInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Check(tt.mode, tt.target, keys)
			if tt.kind != 0 {
				require.Error(t, err)
				assert.Equal(t, tt.kind, kindOf(err), err.Error())
				assert.Contains(t, err.Error(), tt.contains)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.mode, v.Mode)
			assert.Equal(t, tt.commit, v.Commit != nil)
			assert.Equal(t, tt.tag, v.Tag != nil)
			if tt.tag {
				assert.Equal(t, FormatSSH, v.Tag.Format)
			}
		})
	}
}
