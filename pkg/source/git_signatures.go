package source

import (
	"context"
	"strings"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/git"
	"github.com/kumodo/convoy-apiserver/pkg/gitverify"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
)

// gitObjects are the raw objects of a fetched commit (git.Objects), kept
// with its files in the content cache so that a cached commit is verified
// without a refetch. ref is the ref they were fetched for: the annotated
// tag object, if any, is that ref's.
type gitObjects struct {
	ref string
	git.Objects
}

// size is the bytes o holds (0 for nil).
func (o *gitObjects) size() int {
	if o == nil {
		return 0
	}
	return len(o.ref) + len(o.Commit) + len(o.TagID) + len(o.Tag)
}

// tagMode tells whether spec verifies the annotated tag of the ref.
func tagMode(spec *convoyv1alpha1.GitVerification) bool {
	return spec != nil && (spec.Mode == string(gitverify.ModeTag) || spec.Mode == string(gitverify.ModeTagAndHEAD))
}

// lacksObjects tells whether a, r's commit, lacks what spec verifies: its
// objects, or the annotated tag object of r's ref (a tag ref) when a was
// fetched for another ref (the tag is the ref's, not the commit's).
func lacksObjects(a *artifact, r *gitResolution, spec *convoyv1alpha1.GitVerification) bool {
	switch {
	case spec == nil:
		return false
	case a.objects == nil:
		return true
	}
	return tagMode(spec) && strings.HasPrefix(r.ref, "refs/tags/") && a.objects.ref != r.ref
}

// objectsFlight keeps the fetch of a tag ref's objects apart from a fetch
// of the same commit for another ref (which gets another ref's tag).
func objectsFlight(r *gitResolution, spec *convoyv1alpha1.GitVerification) string {
	if !tagMode(spec) {
		return ""
	}
	return "\x00" + r.ref
}

// verifyGit verifies r's commit, whose files and objects a holds, under
// spec (pkg/verify, reading its Secret as the Release), and puts the
// signatures into r.resolved (Verified, VerifiedTag). The caller serves
// none of a's files unless it returns nil.
func (f *Fetcher) verifyGit(ctx context.Context, namespace string, spec *convoyv1alpha1.GitVerification, inputs Inputs, r *gitResolution, a *artifact, where string) error {
	since := f.freshAfter(ctx)
	host := verifyHost{releaseSecrets: releaseSecrets{inputs: inputs, namespace: namespace}, f: f, since: since}
	t := verify.GitTarget{Namespace: namespace, URL: r.url, Ref: r.ref, Commit: gitverify.Object{ID: r.commit, Data: a.objects.Commit}, Where: where, Since: since}
	if a.objects.TagID != "" && a.objects.ref == r.ref {
		t.Tag = &gitverify.Object{ID: a.objects.TagID, Data: a.objects.Tag}
	}
	sigs, err := f.verifier.VerifyGit(ctx, host, t, spec)
	if err != nil {
		return err
	}
	r.resolved.Verified, r.resolved.VerifiedTag = sigs.Verified, sigs.VerifiedTag
	return nil
}

// verifyRevisionGit is VerifyRevision for a Git source: the commit the
// stored render names, with the annotated tag of its ref for the tag
// modes, verified under the Release's verify as a fresh render's is
// (listed and fetched with the Release's credentials, through the content
// cache). It returns the commit's signature and, in a tag mode, the tag's.
func (f *Fetcher) verifyRevisionGit(ctx context.Context, release *convoyv1alpha1.Release, inputs Inputs, resolved *subresourcesv1alpha1.ResolvedSource) (sig, tagSig *subresourcesv1alpha1.SourceSignature, err error) {
	src := release.Spec.Source.Git
	if err := refuseOtherRevision(KindGitRepository, src.URL, resolved); err != nil {
		return nil, nil, err
	}
	if !git.IsHash(resolved.Commit) {
		return nil, nil, countRefusal(failure.New(verify.ReasonSignatureUnverified, nil, "the stored render names %s@%q, not a commit hash: it cannot be verified", src.URL, resolved.Commit))
	}
	ctx, cancel := context.WithTimeoutCause(ctx, f.opts.Timeout, errFetchTimeout)
	defer cancel()
	r, err := f.revisionGit(ctx, release.Namespace, src, inputs, resolved)
	if err != nil {
		return nil, nil, countRefusal(f.timedOut(ctx, err))
	}
	where := r.where() + " (a stored render's source)"
	a, err := f.gitCommit(ctx, release.Namespace, r, where, src.Verify)
	if err == nil {
		err = f.verifyGit(ctx, release.Namespace, src.Verify, inputs, r, a, where)
	}
	if err != nil {
		return nil, nil, countRefusal(f.timedOut(ctx, err))
	}
	return r.resolved.Verified, r.resolved.VerifiedTag, nil
}

// revisionGit is the resolution of resolved, a stored render's commit,
// with the Release's credentials: their listing confirms their access,
// and tells whether the commit is still its ref's tip. A ref that is gone
// leaves the commit alone, asked for by its hash (mode HEAD), or is
// SignatureUnverified (the tag modes: no tag to verify).
func (f *Fetcher) revisionGit(ctx context.Context, namespace string, src *convoyv1alpha1.GitRepositorySource, inputs Inputs, resolved *subresourcesv1alpha1.ResolvedSource) (*gitResolution, error) {
	creds, refs, err := f.gitAccess(ctx, namespace, src, inputs)
	if err != nil {
		return nil, err
	}
	r := &gitResolution{url: src.URL, creds: creds, commit: strings.ToLower(resolved.Commit)}
	if tip, ok := refs[resolved.Ref]; ok && resolved.Ref != "" {
		r.ref, r.tip = resolved.Ref, tip == r.commit
	} else if tagMode(src.Verify) {
		return nil, failure.New(verify.ReasonSignatureUnverified, nil, "the stored render names %s %s@%s, and the repository has no ref %s any more: no tag to verify (verify mode %s)",
			src.URL, resolved.Ref, r.commit, resolved.Ref, src.Verify.Mode)
	}
	r.resolved = &subresourcesv1alpha1.ResolvedSource{Kind: KindGitRepository, URL: src.URL, Ref: r.ref, Commit: r.commit}
	return r, nil
}
