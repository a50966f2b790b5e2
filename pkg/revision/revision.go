// Package revision is what a revision asked for (GET /diff?revision=REV, a
// pull request's preview) means for each kind of source: the OCI tag or
// digest, the exact Helm chart version, the Git ref and commit picked from
// a listing. It travels on the context (With, From) from the render's ask
// (pkg/desired) to the fetches (pkg/source), which read everything else of
// the source from the Release as at its own revision.
package revision

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

// MaxLength bounds a revision: a Git ref name, a tag, a digest or a
// version.
const MaxLength = 255

// key is the context key of With.
type key struct{}

// With asks the fetches of ctx for the Release's own source at rev instead
// of the revision its spec names; "" leaves ctx as it is.
func With(ctx context.Context, rev string) context.Context {
	if rev == "" {
		return ctx
	}
	return context.WithValue(ctx, key{}, rev)
}

// From is the revision of With, or "".
func From(ctx context.Context) string {
	rev, _ := ctx.Value(key{}).(string)
	return rev
}

var (
	ociTagPattern    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
	ociDigestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// Check refuses a revision no source could have (SourceInvalid): empty,
// longer than MaxLength, or with white space or control characters.
func Check(rev string) error {
	if rev == "" || len(rev) > MaxLength || strings.ContainsFunc(rev, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		shown := rev
		if len(shown) > 64 {
			shown = shown[:64] + "..."
		}
		return failure.New(sourcefailure.ReasonSourceInvalid, nil, "revision %q is not a revision: 1 to %d characters, no white space", shown, MaxLength)
	}
	return nil
}

// Content tells whether rev names content itself, a commit hash or a
// digest, which no later listing, tag or index can change; a ref, a tag or
// a version may appear after what was read before.
func Content(rev string) bool {
	return git.IsHash(rev) || ociDigestPattern.MatchString(rev)
}

// Source is src at rev: an OCI tag or digest, an exact Helm chart version
// in place of the spec's; a Git source as it is (Git picks rev from the
// listing). A ConfigMap has no revisions. src itself is not changed.
func Source(src convoyv1alpha1.ReleaseSource, rev string) (convoyv1alpha1.ReleaseSource, error) {
	if err := Check(rev); err != nil {
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
		// "=" picks the entry of that version only, never a range.
		helm.Version = "=" + rev
		src.HelmRepository = &helm
	}
	return src, nil
}

// GitPick is a Git revision resolved in a listing: the full name of the
// ref to fetch it from ("" for the commit by its hash alone), the commit,
// and whether it is that ref's tip (a fetch of depth 1).
type GitPick struct {
	Ref, Commit string
	Tip         bool
}

// Git resolves rev in refs, the listing of repo: a commit hash (fetched
// from the first ref whose tip it is, else from the history of own's
// branch, else by its hash alone), a full ref name, or a tag or a branch
// name (a tag first, as git does). A revision refs do not have is
// ArtifactNotFound.
func Git(repo, rev string, own convoyv1alpha1.GitReference, refs git.Refs) (GitPick, error) {
	var p GitPick
	switch {
	case git.IsHash(rev):
		p.Commit = strings.ToLower(rev)
		var names []string
		for name, commit := range refs {
			if commit == p.Commit {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		switch {
		case len(names) > 0:
			p.Ref, p.Tip = names[0], true
		case own.Branch != "":
			if _, ok := refs[git.BranchRef(own.Branch)]; ok {
				p.Ref = git.BranchRef(own.Branch)
			}
		}
		return p, nil
	case strings.HasPrefix(rev, "refs/"):
		p.Ref = rev
	default:
		for _, name := range []string{git.TagRef(rev), git.BranchRef(rev)} {
			if _, ok := refs[name]; ok {
				p.Ref = name
				break
			}
		}
		if p.Ref == "" {
			return p, failure.New(sourcefailure.ReasonArtifactNotFound, nil, "%s: revision %q is no commit hash, ref, tag or branch of the repository", repo, rev)
		}
	}
	commit, ok := refs[p.Ref]
	if !ok {
		return p, failure.New(sourcefailure.ReasonArtifactNotFound, nil, "%s: revision %q: the repository has no ref %s", repo, rev, p.Ref)
	}
	p.Commit, p.Tip = commit, true
	return p, nil
}

// Without is ctx asking for no revision: the revision of With names the
// Release's own source (spec.source), never its values source, which is
// fetched at the revision its spec names.
func Without(ctx context.Context) context.Context {
	if From(ctx) == "" {
		return ctx
	}
	return context.WithValue(ctx, key{}, "")
}
