package source

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/pkg/revision"
)

// A revision is resolved from the listing kept for ResolveMaxAge; one that
// is not in it (a pull request's ref pushed since) is looked for once more
// in a fresh listing, and a revision of no ref costs that one more listing
// per request, not more.
func TestGitRevisionPushedAfterTheListing(t *testing.T) {
	g := startGit(t, gitserver.Options{})
	g.commit(t, "main", map[string]string{"a.yaml": "kind: ConfigMap"})
	f, clk := newFetcher(t)
	rel := gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: convoyv1alpha1.GitReference{Branch: "main"}})
	_, err := f.Resolve(context.Background(), rel, inputsOf())
	require.NoError(t, err)
	listings := g.server.Listings()
	clk.SetTime(clk.Now().Add(time.Second)) // within ResolveMaxAge

	pr := g.commit(t, "pr", map[string]string{"a.yaml": "kind: ConfigMap\n# pr"})
	require.NoError(t, g.repo.SetRef("refs/pull/1/head", pr))
	at := revision.With(context.Background(), "refs/pull/1/head")
	digest, err := f.Resolve(at, rel, inputsOf())
	require.NoError(t, err)
	assert.Equal(t, "git:"+pr, digest)
	assert.Equal(t, listings+1, g.server.Listings(), "one fresh listing")
	src, err := f.Fetch(at, rel, inputsOf())
	require.NoError(t, err)
	assert.Equal(t, pr, src.Resolved.Commit)
	assert.Equal(t, "refs/pull/1/head", src.Resolved.Ref)
	// The fetch's session begins with the server's advertisement (a GET of
	// info/refs, counted as a listing): the fresh listing itself is kept.
	assert.Equal(t, listings+2, g.server.Listings(), "the fresh listing is kept")
	listings = g.server.Listings()

	clk.SetTime(clk.Now().Add(time.Second))
	_, err = f.Resolve(revision.With(context.Background(), "refs/pull/2/head"), rel, inputsOf())
	require.Error(t, err)
	assert.Equal(t, listings+1, g.server.Listings(), "one more listing, then the refusal")

	// A commit the repository does not have is no better found by a fresh
	// listing: one fetch of the branch's history, not two.
	listings, fetches := g.server.Listings(), g.server.Fetches()
	_, err = f.Fetch(revision.With(context.Background(), "5555555555555555555555555555555555555555"), rel, inputsOf())
	require.Error(t, err)
	assert.Equal(t, fetches+1, g.server.Fetches(), "one fetch")
	assert.Equal(t, listings+1, g.server.Listings(), "its own advertisement, no fresh listing")

	own, err := f.Fetch(context.Background(), rel, inputsOf())
	require.NoError(t, err)
	assert.Equal(t, "refs/heads/main", own.Resolved.Ref, "the Release's own revision is untouched")
}
