package verify

import (
	"context"
	"errors"
	"time"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/gitverify"
)

// ProviderGit is the provider of the signatures of Git commits and
// annotated tags (spec.source.git.verify).
const ProviderGit = "git"

// The layouts of a Git signature: the commit object's gpgsig header, or
// the annotated tag object's signature block.
const (
	LayoutGitCommit = "commit"
	LayoutGitTag    = "tag"
)

// GitTarget is what VerifyGit verifies: the commit a Git source resolved
// to and is rendered from, with the raw objects the fetch read.
type GitTarget struct {
	// Namespace is the Release's: verdicts are never shared across
	// namespaces.
	Namespace string
	// URL is the repository's, as the Release names it.
	URL string
	// Ref is the full name of the ref the commit came from ("" for a
	// commit asked for by its hash).
	Ref string
	// Commit is the commit object; Tag the annotated tag object Ref names
	// (nil: Ref names none, a branch or a lightweight tag).
	Commit gitverify.Object
	Tag    *gitverify.Object
	// Where names the commit in messages (its repository, ref and commit).
	Where string
	// Since is the time of a refresh: a SignatureUnverified read before it
	// is not used. Zero: none.
	Since time.Time
}

// GitSignatures are the signatures a Git source verified with: Verified
// the commit's (modes HEAD, TagAndHEAD) or the tag's (Tag); VerifiedTag
// the tag's under TagAndHEAD (ResolvedSource.Verified and VerifiedTag).
type GitSignatures struct {
	Verified, VerifiedTag *subresourcesv1alpha1.SourceSignature
}

// VerifyGit verifies t with spec (the Release's spec.source.git.verify):
// the public keys of its Secret, read through f as the Release, and its
// mode (HEAD when empty). The verdict is kept by namespace, repository,
// ref, commit, tag object, mode and the digest of the keys, never across
// namespaces or key sets; the objects are verified against their ids, so
// the verdict of an id is the verdict of its content. Every failure to
// verify is SignatureUnverified; the outcome is counted
// (convoy_source_verifications_total{provider="git"}).
func (v *Verifier) VerifyGit(ctx context.Context, f Fetcher, t GitTarget, spec *convoyv1alpha1.GitVerification) (GitSignatures, error) {
	sigs, err := v.verifyGit(ctx, f, t, spec)
	countVerification(ProviderGit, err)
	return sigs, err
}

func (v *Verifier) verifyGit(ctx context.Context, f Fetcher, t GitTarget, spec *convoyv1alpha1.GitVerification) (GitSignatures, error) {
	mode := gitverify.Mode(spec.Mode)
	if mode == "" {
		mode = gitverify.ModeHEAD
	}
	secretWhere := "verify.secretRef " + convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: t.Namespace, Name: spec.SecretRef.Name}.Describe()
	s, err := readSecret(ctx, f, spec.SecretRef.Name, t.Where, secretWhere)
	if err != nil {
		return GitSignatures{}, err
	}
	// The limits are checked before anything of the Secret is parsed.
	keys, err := gitverify.ParseKeys(s.Data, v.opts.GitLimits)
	if err != nil {
		return GitSignatures{}, failure.Quiet(ReasonSignatureUnverified, err, "%s: %s: %s", t.Where, secretWhere, gitMessage(err))
	}
	tagID := ""
	if t.Tag != nil {
		tagID = t.Tag.ID
	}
	key := "verify\x00" + t.Namespace + "\x00" + t.URL + "\x00" + t.Ref + "\x00" + t.Commit.ID + "\x00" + tagID + "\x00" + ProviderGit + "\x00" + string(mode) + "\x00" + keys.Digest()
	refuse := func(err error) error { return gitFailure(t.Where, mode, secretWhere, err) }
	got, err := v.kept(ctx, f, key, t.Since, refuse, func(context.Context) (signed, error) {
		verdict, err := gitverify.Check(mode, gitverify.Target{Ref: t.Ref, Commit: t.Commit, Tag: t.Tag}, keys)
		if err != nil {
			return signed{}, err
		}
		commit, tag := gitSignature(verdict.Commit, LayoutGitCommit), gitSignature(verdict.Tag, LayoutGitTag)
		if mode == gitverify.ModeTag {
			return signed{sig: tag}, nil
		}
		return signed{sig: commit, tag: tag}, nil
	})
	return GitSignatures{Verified: got.sig, VerifiedTag: got.tag}, err
}

// gitSignature is the SourceSignature of signer (nil: nil), found where
// layout says.
func gitSignature(signer *gitverify.Signer, layout string) *subresourcesv1alpha1.SourceSignature {
	if signer == nil {
		return nil
	}
	return &subresourcesv1alpha1.SourceSignature{
		Provider: ProviderGit, Format: signer.Format, Key: signer.Key, Fingerprint: signer.Fingerprint,
		KeyID: signer.KeyID, Identity: signer.Identity, Layout: layout,
	}
}

// gitFailure is err of gitverify.Check as a *failure.Error: every kind is
// SignatureUnverified (the message, gitverify's, says what was expected
// and what was found); another error is a bug, InternalError.
func gitFailure(where string, mode gitverify.Mode, secretWhere string, err error) error {
	if _, ok := errors.AsType[*gitverify.Error](err); !ok {
		return failure.New(failure.ReasonInternalError, err, "%s: verifying the signatures", where)
	}
	return failure.Quiet(ReasonSignatureUnverified, err, "%s: %s (verify mode %s, the keys of %s)", where, gitMessage(err), mode, secretWhere)
}

// gitMessage is the message of err, a *gitverify.Error's own (without the
// errors it wraps, which it quotes already).
func gitMessage(err error) string {
	if e, ok := errors.AsType[*gitverify.Error](err); ok {
		return e.Message
	}
	return err.Error()
}
