package source

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/git"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// MaxRevisionLength bounds a revision asked for (?revision=): a Git ref
// name, a tag, a digest or a version.
const MaxRevisionLength = 255

// revisionKey is the context key of WithRevision.
type revisionKey struct{}

// WithRevision asks the fetches of ctx for the Release's own source at rev
// instead of the revision its spec names (GET /diff?revision=): for Git a
// commit hash, a full ref name, or a tag or branch name (tags first, as
// git does); for OCI a tag or a digest; for a Helm repository a chart
// version. Everything else of the source stays the Release's: URL,
// credentials, verification, limits, slots.
func WithRevision(ctx context.Context, rev string) context.Context {
	if rev == "" {
		return ctx
	}
	return context.WithValue(ctx, revisionKey{}, rev)
}

// RevisionFrom is the revision of WithRevision, or "".
func RevisionFrom(ctx context.Context) string {
	rev, _ := ctx.Value(revisionKey{}).(string)
	return rev
}

var (
	ociTagPattern    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
	ociDigestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// CheckRevision refuses a revision no source could have: empty, too long,
// or with white space or control characters.
func CheckRevision(rev string) error {
	if rev == "" || len(rev) > MaxRevisionLength || strings.ContainsFunc(rev, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return failure.New(sourcefailure.ReasonSourceInvalid, nil, "revision %q is not a revision: 1 to %d characters, no white space", cut(rev), MaxRevisionLength)
	}
	return nil
}

// cut is rev shortened for a message.
func cut(rev string) string {
	if len(rev) > 64 {
		return rev[:64] + "..."
	}
	return rev
}

// atRevision is src at the revision of ctx: an OCI tag or digest, a Helm
// chart version in place of the spec's (Git is resolved by
// gitRevision, which needs the listing). A ConfigMap has no revisions.
func atRevision(ctx context.Context, src convoyv1alpha1.ReleaseSource) (convoyv1alpha1.ReleaseSource, error) {
	rev := RevisionFrom(ctx)
	if rev == "" {
		return src, nil
	}
	if err := CheckRevision(rev); err != nil {
		return src, err
	}
	switch {
	case src.ConfigMap != nil:
		return src, failure.New(sourcefailure.ReasonSourceInvalid, nil, "revision %q: a ConfigMap source has no revisions (a revision is of a Git, OCI or Helm repository source)", rev)
	case src.OCIRepository != nil:
		oci := *src.OCIRepository
		switch {
		case ociDigestPattern.MatchString(rev):
			oci.Tag, oci.Digest = "", rev
		case ociTagPattern.MatchString(rev):
			oci.Tag, oci.Digest = rev, ""
		default:
			return src, failure.New(sourcefailure.ReasonSourceInvalid, nil, "revision %q is neither an OCI tag nor a digest (sha256: and 64 hex digits)", rev)
		}
		src.OCIRepository = &oci
	case src.HelmRepository != nil:
		if _, err := semver.NewVersion(rev); err != nil {
			return src, failure.New(sourcefailure.ReasonSourceInvalid, err, "revision %q is not a chart version", rev)
		}
		helm := *src.HelmRepository
		// An exact version, never a range: "=" picks the entry of that
		// version only.
		helm.Version = "=" + rev
		src.HelmRepository = &helm
	}
	return src, nil
}

// gitRevision resolves rev in refs, the listing of repo: a commit hash
// (fetched from a ref whose tip it is, else from the history of the
// Release's branch, else by its hash alone), a full ref name, or a tag or
// a branch name (a tag first, as git does).
func gitRevision(repo, rev string, own convoyv1alpha1.GitReference, refs git.Refs) (*gitResolution, error) {
	r := &gitResolution{url: repo}
	switch {
	case git.IsHash(rev):
		r.commit = strings.ToLower(rev)
		names := make([]string, 0, len(refs))
		for name, commit := range refs {
			if commit == r.commit {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		switch {
		case len(names) > 0:
			r.ref, r.tip = names[0], true
		case own.Branch != "":
			if _, ok := refs[git.BranchRef(own.Branch)]; ok {
				r.ref = git.BranchRef(own.Branch)
			}
		}
		return r, nil
	case strings.HasPrefix(rev, "refs/"):
		r.ref = rev
	default:
		for _, name := range []string{git.TagRef(rev), git.BranchRef(rev)} {
			if _, ok := refs[name]; ok {
				r.ref = name
				break
			}
		}
		if r.ref == "" {
			return nil, failure.New(sourcefailure.ReasonArtifactNotFound, nil, "%s: revision %q is no commit hash, ref, tag or branch of the repository", repo, rev)
		}
	}
	commit, ok := refs[r.ref]
	if !ok {
		return nil, failure.New(sourcefailure.ReasonArtifactNotFound, nil, "%s: revision %q: the repository has no ref %s", repo, rev, r.ref)
	}
	r.commit, r.tip = commit, true
	return r, nil
}

// freshRevision is ctx asking for what the registry or repository says
// now (WithFreshAfter), true, when err is a revision asked for that was not
// found in what was read before: a ref pushed, a tag or a chart version
// published after the listing, tag or index kept for ResolveMaxAge. One
// more read per request, shared with those in flight; never for the loops,
// which ask for no revision.
func (f *Fetcher) freshRevision(ctx context.Context, err error) (context.Context, bool) {
	if err == nil || RevisionFrom(ctx) == "" || !f.freshAfter(ctx).IsZero() {
		return ctx, false
	}
	if _, ok := failure.Find(err, sourcefailure.ReasonArtifactNotFound); !ok {
		return ctx, false
	}
	return WithFreshAfter(ctx, f.opts.Clock.Now()), true
}
