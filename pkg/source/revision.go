package source

import (
	"context"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/revision"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// atRevision is src at the revision of ctx (revision.With), if any.
func atRevision(ctx context.Context, src convoyv1alpha1.ReleaseSource) (convoyv1alpha1.ReleaseSource, error) {
	if rev := revision.From(ctx); rev != "" {
		return revision.Source(src, rev)
	}
	return src, nil
}

// freshRevision is ctx asking for what the registry or repository says
// now (WithFreshAfter), true, when err is a revision asked for that was not
// found in what was read before: a ref pushed, a tag or a chart version
// published after the listing, tag or index kept for ResolveMaxAge. One
// more read per request, shared with those in flight; never for the loops,
// which ask for no revision, nor for a commit hash or a digest, which a
// fresh read would not find either (a missing commit would be fetched
// twice).
func (f *Fetcher) freshRevision(ctx context.Context, err error) (context.Context, bool) {
	rev := revision.From(ctx)
	if err == nil || rev == "" || revision.Content(rev) || !f.freshAfter(ctx).IsZero() {
		return ctx, false
	}
	if _, ok := failure.Find(err, sourcefailure.ReasonArtifactNotFound); !ok {
		return ctx, false
	}
	return WithFreshAfter(ctx, f.opts.Clock.Now()), true
}
