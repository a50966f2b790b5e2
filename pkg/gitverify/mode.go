package gitverify

import "strings"

// Mode is what a verify policy checks, with Flux's names and meanings
// (GitRepository's spec.verify.mode).
type Mode string

// Modes.
const (
	// ModeHEAD verifies the commit.
	ModeHEAD Mode = "HEAD"
	// ModeTag verifies the annotated tag object the ref names, which must
	// name the commit.
	ModeTag Mode = "Tag"
	// ModeTagAndHEAD verifies both, and the tag must name the commit.
	ModeTagAndHEAD Mode = "TagAndHEAD"
)

// Target is what a ref resolved to: the commit, and the annotated tag
// object when the ref names one (nil for a lightweight tag, a branch or a
// commit).
type Target struct {
	// Ref is the ref's full name ("refs/tags/v1"), for the messages; ""
	// for a commit asked for by its hash.
	Ref    string
	Commit Object
	Tag    *Object
}

// Verdict is who signed what a mode verifies: Commit for HEAD, Tag for
// Tag, both for TagAndHEAD.
type Verdict struct {
	Mode   Mode
	Commit *Signer
	Tag    *Signer
}

// Check verifies t under mode with keys: HEAD the commit; Tag the
// annotated tag object (KindNotAnnotatedTag without one); TagAndHEAD both.
// In both tag modes the tag must name the commit, and a ref
// refs/tags/NAME a tag object of the tag NAME (KindTagNotOnCommit),
// checked first: a tag on another commit fails so whatever the signatures.
func Check(mode Mode, t Target, keys *Keys) (*Verdict, error) {
	v := &Verdict{Mode: mode}
	switch mode {
	case ModeHEAD:
	case ModeTag, ModeTagAndHEAD:
		if err := checkTag(mode, t); err != nil {
			return nil, err
		}
		signer, err := VerifyTag(*t.Tag, keys)
		if err != nil {
			return nil, err
		}
		v.Tag = signer
		if mode == ModeTag {
			return v, nil
		}
	default:
		return nil, errorf(KindInvalid, nil, "the verify mode %q is none of %s, %s, %s", mode, ModeHEAD, ModeTag, ModeTagAndHEAD)
	}
	signer, err := VerifyCommit(t.Commit, keys)
	if err != nil {
		return nil, err
	}
	v.Commit = signer
	return v, nil
}

// checkTag checks that t has an annotated tag object of t's commit.
func checkTag(mode Mode, t Target) error {
	ref := t.Ref
	if ref == "" {
		ref = "the commit " + t.Commit.ID
	}
	if t.Tag == nil {
		what := "a branch or another ref"
		switch {
		case strings.HasPrefix(ref, "refs/tags/"):
			what = "a lightweight tag"
		case t.Ref == "":
			what = "a commit"
		}
		return errorf(KindNotAnnotatedTag, nil, "verify mode %s verifies an annotated tag, and %s is %s, not an annotated tag", mode, ref, what)
	}
	h := parseTagHeader(t.Tag.Data)
	if h.kind != typeCommit {
		return errorf(KindTagNotOnCommit, nil, "%s is an annotated tag of a %s (%s), not of a commit", ref, h.kind, h.object)
	}
	// A tag ref must name a tag object of its own name: a signed tag
	// object of an older release, pushed under a higher version's name,
	// vouches for that release only.
	if name, ok := strings.CutPrefix(t.Ref, "refs/tags/"); ok && h.name != name {
		return errorf(KindTagNotOnCommit, nil, "verify mode %s: %s names the annotated tag object %s of the tag %q, not of the tag %q", mode, ref, t.Tag.ID, h.name, name)
	}
	// Tag too: the tag verified must be the commit's that is rendered (a
	// ref that moved between the listing and the fetch would name another).
	if !strings.EqualFold(h.object, t.Commit.ID) {
		return errorf(KindTagNotOnCommit, nil, "verify mode %s: the tag %s names the commit %s, not the commit %s that is rendered", mode, ref, h.object, t.Commit.ID)
	}
	return nil
}
