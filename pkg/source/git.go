package source

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/archive"
	"github.com/kumodo/convoy-apiserver/pkg/credentials"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/git"
	"github.com/kumodo/convoy-apiserver/pkg/redact"
	"github.com/kumodo/convoy-apiserver/pkg/revision"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// KindGitRepository is the kind of a ResolvedSource of a Git repository.
const KindGitRepository = "GitRepository"

// gitResolution is a Git source resolved to a commit.
type gitResolution struct {
	// url is the repository's URL, as the Release names it.
	url    string
	creds  *gitCredentials
	ref    string
	commit string
	// tip tells that commit is the tip of ref, which a fetch of depth 1
	// of ref gets.
	tip      bool
	resolved *subresourcesv1alpha1.ResolvedSource
}

// where names r's commit in messages: its repository, ref and commit.
func (r *gitResolution) where() string {
	if r.ref == "" {
		return fmt.Sprintf("%s@%s", r.url, r.commit)
	}
	return fmt.Sprintf("%s %s@%s", r.url, r.ref, r.commit)
}

// checkGitURL refuses a URL that is not https or ssh (plain http only to
// loopback with AllowLoopback: the transport's guard refuses it
// otherwise), that holds a password, or whose ssh user is the only
// credential.
func checkGitURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || strings.Trim(u.Path, "/") == "" {
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "%s is not a URL of a Git repository (https://HOST/PATH or ssh://HOST/PATH)", redactURL(raw))
	}
	switch u.Scheme {
	case "https", "http":
		if err := refuseUserinfo(raw); err != nil {
			return nil, err
		}
	case "ssh":
		if _, has := u.User.Password(); has {
			return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "%s: the URL must not hold a password: use secretRef", redactURL(raw))
		}
	default:
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "%s: a Git source is https:// or ssh:// (the scheme %q is not supported)", redactURL(raw), u.Scheme)
	}
	return u, nil
}

// redactURL is raw without its user information.
func redactURL(raw string) string {
	r, _ := redact.URL(raw)
	return r
}

// resolveGit lists the refs of the repository (one listing per URL and
// credentials per ResolveMaxAge, shared by every Release that names them)
// and picks the commit of src.Ref from it: a branch, a tag (peeled), the
// highest tag that meets a semver range, or a commit (whose access the
// listing by these credentials confirms).
func (f *Fetcher) resolveGit(ctx context.Context, namespace string, src *convoyv1alpha1.GitRepositorySource, inputs Inputs) (*gitResolution, error) {
	creds, refs, err := f.gitAccess(ctx, namespace, src, inputs)
	if err != nil {
		return nil, err
	}
	if rev := revision.From(ctx); rev != "" {
		p, err := revision.Git(src.URL, rev, src.Ref, refs)
		if err != nil {
			return nil, err
		}
		return &gitResolution{url: src.URL, creds: creds, ref: p.Ref, commit: p.Commit, tip: p.Tip,
			resolved: &subresourcesv1alpha1.ResolvedSource{Kind: KindGitRepository, URL: src.URL, Ref: p.Ref, Commit: p.Commit}}, nil
	}
	r := &gitResolution{url: src.URL, creds: creds}
	ref := src.Ref
	switch {
	case ref.Commit != "":
		if !git.IsHash(ref.Commit) {
			return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "%s: commit %q is not a full commit hash (40 hex digits)", src.URL, ref.Commit)
		}
		r.commit = strings.ToLower(ref.Commit)
		if ref.Branch != "" {
			r.ref = git.BranchRef(ref.Branch)
			if _, ok := refs[r.ref]; !ok {
				return nil, failure.New(sourcefailure.ReasonArtifactNotFound, nil, "%s: no branch %s to fetch commit %s from", src.URL, ref.Branch, r.commit)
			}
		}
		r.tip = r.ref != "" && refs[r.ref] == r.commit
	case ref.Branch != "":
		r.ref = git.BranchRef(ref.Branch)
	case ref.Tag != "":
		r.ref = git.TagRef(ref.Tag)
	case ref.SemVer != "":
		if r.ref, err = pickTag(src.URL, ref.SemVer, refs); err != nil {
			return nil, err
		}
	default:
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "%s: ref names no branch, tag, semver or commit", src.URL)
	}
	if r.commit == "" {
		c, ok := refs[r.ref]
		if !ok {
			return nil, failure.New(sourcefailure.ReasonArtifactNotFound, nil, "%s: no ref %s", src.URL, r.ref)
		}
		r.commit, r.tip = c, true
	}
	r.resolved = &subresourcesv1alpha1.ResolvedSource{Kind: KindGitRepository, URL: src.URL, Ref: r.ref, Commit: r.commit}
	return r, nil
}

// gitAccess checks src's URL, reads its credentials (as the Release) and
// lists the repository's refs with them (listGitRefs).
func (f *Fetcher) gitAccess(ctx context.Context, namespace string, src *convoyv1alpha1.GitRepositorySource, inputs Inputs) (*gitCredentials, git.Refs, error) {
	u, err := checkGitURL(src.URL)
	if err != nil {
		return nil, nil, err
	}
	creds, err := f.gitCredentials(ctx, inputs, namespace, src, u)
	if err != nil {
		return nil, nil, err
	}
	refs, err := f.listGitRefs(ctx, namespace, src.URL, creds)
	return creds, refs, err
}

// pickTag is the tag of refs whose name is the highest version that meets
// the range want, as Helm repository versions are picked: prereleases only
// when the range names one (Masterminds/semver's rule).
func pickTag(repo, want string, refs git.Refs) (string, error) {
	c, err := semver.NewConstraint(want)
	if err != nil {
		return "", failure.New(sourcefailure.ReasonSourceInvalid, err, "%s: semver %q is not a version range", repo, want)
	}
	var best *semver.Version
	bestRef := ""
	for name := range refs {
		tag, ok := strings.CutPrefix(name, "refs/tags/")
		if !ok || strings.HasSuffix(tag, "^{}") {
			continue
		}
		v, err := semver.NewVersion(tag)
		if err != nil || !c.Check(v) {
			continue
		}
		if best == nil || v.GreaterThan(best) || (v.Equal(best) && name > bestRef) {
			best, bestRef = v, name
		}
	}
	if best == nil {
		return "", failure.New(sourcefailure.ReasonArtifactNotFound, nil, "%s: no tag meets semver %q", repo, want)
	}
	return bestRef, nil
}

// listGitRefs is the ref listing of repo as creds see it, kept for
// ResolveMaxAge: a listing is what confirms that these credentials may
// read the repository, so a commit fetched for others is served from the
// content cache only to credentials whose own listing succeeded.
func (f *Fetcher) listGitRefs(ctx context.Context, namespace, repo string, creds *gitCredentials) (git.Refs, error) {
	key := "git\x00" + repo + "\x00" + creds.key
	since := f.freshAfter(ctx)
	if f.gitListings != nil {
		if refs, ok := f.gitListings.GetSince(key, since); f.countLookup(agecache.CacheResolve, ok) {
			return refs, nil
		}
	}
	v, err := f.shared(ctx, namespace, "gitlist\x00"+key+freshFlight(since), func(ctx context.Context) (any, error) {
		if f.gitListings != nil {
			if refs, ok := f.gitListings.GetSince(key, since); ok {
				return refs, nil
			}
		}
		refs, err := git.List(ctx, repo, creds.auth)
		if err != nil {
			return nil, gitFailure(repo+": listing the refs", err)
		}
		if f.gitListings != nil {
			f.gitListings.Put(key, refs)
		}
		return refs, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(git.Refs), nil
}

// git fetches the directory of a Git source: it resolves the ref (one
// listing), then serves the commit's files from the content cache (by URL
// and commit), or fetches the commit once: depth 1, that ref only, no
// tags, into memory storage that counts its bytes, and reads its files from
// the tree objects, never a checkout. A source that asks for signatures
// (verify) gets the files only of a commit that verifies (verifyGit).
func (f *Fetcher) git(ctx context.Context, namespace string, src *convoyv1alpha1.GitRepositorySource, inputs Inputs) (*Source, error) {
	dir, err := CleanPath(src.Path)
	if err != nil {
		return nil, err
	}
	r, err := f.resolveGit(ctx, namespace, src, inputs)
	if err != nil {
		return nil, err
	}
	where := r.where()
	out := &Source{Where: where, Path: dir, Resolved: r.resolved}
	a, err := f.gitCommit(ctx, namespace, r, where, src.Verify)
	if err != nil {
		return nil, err
	}
	// The commit verified is the one resolved and served below, and none
	// of its files is served unless it verifies.
	if src.Verify != nil {
		if err := f.verifyGit(ctx, namespace, src.Verify, inputs, r, a, where); err != nil {
			return nil, err
		}
	}
	if out.Links, err = checkLinks(where, a.links, dir); err != nil {
		return nil, err
	}
	if out.Files, out.Omitted, err = selectGitFiles(where, a.files, dir, int64(f.opts.MaxArtifactBytes)); err != nil {
		return nil, err
	}
	return out, nil
}

// gitCommit is the artifact of r's commit, its files and raw objects:
// from the content cache (by URL and commit), or fetched once. The
// listing of r's credentials, just now or within ResolveMaxAge, confirmed
// their access to the repository. An artifact that lacks the objects spec
// verifies (lacksObjects: the annotated tag of r's ref, when it was
// fetched for another ref) is fetched again, for r's ref.
func (f *Fetcher) gitCommit(ctx context.Context, namespace string, r *gitResolution, where string, spec *convoyv1alpha1.GitVerification) (*artifact, error) {
	content := contentKey("git\x00"+r.url, r.commit)
	cached := func() (*artifact, bool) {
		a, ok := f.getContent(content)
		return a, ok && !lacksObjects(a, r, spec)
	}
	if a, ok := cached(); f.countLookup(agecache.CacheSource, ok) {
		return a, nil
	}
	v, err := f.shared(ctx, namespace, "gitfetch\x00"+content+"\x00"+r.creds.key+objectsFlight(r, spec), func(ctx context.Context) (any, error) {
		if a, ok := cached(); ok {
			return a, nil
		}
		a, err := f.fetchGit(ctx, r, where)
		if err != nil {
			return nil, err
		}
		f.putContent(content, a)
		return a, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*artifact), nil
}

// selectGitFiles chooses the files of a commit a render gets, within
// limit bytes and archive.MaxBundleFiles files: every file under dir (more is
// ArtifactTooLarge), then the others, in path order, while they fit (a
// kustomization may name a base anywhere in the repository); those that do
// not fit are omitted, by name, so that a render that needs one says so.
// A large file elsewhere in a monorepo does not fail the Releases that do
// not read it.
func selectGitFiles(where string, files []File, dir string, limit int64) ([]File, []string, error) {
	under := func(name string) bool { return dir == "" || strings.HasPrefix(name, dir+"/") }
	var out []File
	left := limit
	for _, file := range files {
		if !under(file.Name) {
			continue
		}
		if len(out) == archive.MaxBundleFiles {
			return nil, nil, failure.New(sourcefailure.ReasonArtifactTooLarge, nil, "%s: path %s holds more than %d files", where, dir, archive.MaxBundleFiles)
		}
		if int64(len(file.Data)) > left {
			return nil, nil, failure.New(sourcefailure.ReasonArtifactTooLarge, nil, "%s: the files of path %s are larger than the limit of %d bytes (--max-artifact-bytes): file %s is %d bytes, %d are left",
				where, dir, limit, file.Name, len(file.Data), left)
		}
		left -= int64(len(file.Data))
		out = append(out, file)
	}
	var omitted []string
	for _, file := range files {
		if under(file.Name) {
			continue
		}
		if len(out) == archive.MaxBundleFiles || int64(len(file.Data)) > left {
			omitted = append(omitted, file.Name)
			continue
		}
		left -= int64(len(file.Data))
		out = append(out, file)
	}
	slices.SortFunc(out, func(x, y File) int { return strings.Compare(x.Name, y.Name) })
	return out, omitted, nil
}

// fetchGit fetches r's commit and reads its tree (git.Fetch).
func (f *Fetcher) fetchGit(ctx context.Context, r *gitResolution, where string) (*artifact, error) {
	// The raw objects are fetched always (a commit's is about 1 KiB): a
	// cached commit is verified for any Release without a refetch.
	c, err := git.Fetch(ctx, git.FetchRequest{URL: r.url, Auth: r.creds.auth, Commit: r.commit, Ref: r.ref, Tip: r.tip, Objects: true})
	var gerr *git.Error
	switch {
	case err == nil:
	case errors.As(err, &gerr):
		return nil, failure.Quiet(gitReasons[gerr.Kind], err, "%s: %s", where, gerr.Message)
	case r.ref == "" && egress.NetworkFailure(err) == "" && !isFailure(err):
		// Git says "not our ref" in its own words only.
		return nil, failure.New(sourcefailure.ReasonArtifactNotFound, err, "%s: the server did not send commit %s asked for by its hash (it must be reachable, and the server must allow it: uploadpack.allowReachableSHA1InWant; or name the branch to fetch it from)", where, r.commit)
	default:
		return nil, gitFailure(where+": fetching the commit", err)
	}
	a := &artifact{files: make([]File, len(c.Files)), links: make([]link, len(c.Links)), objects: &gitObjects{ref: r.ref, Objects: *c.Objects}}
	for i, file := range c.Files {
		a.files[i] = File{Name: file.Name, Where: where + " file " + file.Name, Data: file.Data}
	}
	for i, l := range c.Links {
		a.links[i] = link{name: l.Name, what: l.What}
	}
	return a, nil
}

// isFailure tells whether err holds a *failure.Error.
func isFailure(err error) bool {
	_, ok := failure.As(err)
	return ok
}

// gitFailure is the failure of a request to a Git server: a failure of
// the address policy (or another *failure.Error) keeps its reason; the Git
// client's own (*git.Error) and the server's (go-git's errors, a refused
// host key) get theirs; the rest is SourceUnreachable.
func gitFailure(what string, err error) error {
	if f, ok := failure.As(err); ok {
		return failure.Quiet(f.Reason, err, "%s: %s", what, f.Message)
	}
	var gerr *git.Error
	if errors.As(err, &gerr) {
		return failure.Quiet(gitReasons[gerr.Kind], err, "%s: %s", what, gerr.Message)
	}
	if hk, ok := errors.AsType[*git.HostKeyError](err); ok {
		return failure.New(sourcefailure.ReasonGitHostKeyRefused, err, "%s: %s", what, hk.Error())
	}
	switch {
	case errors.Is(err, git.ErrRepositoryNotFound):
		return failure.New(sourcefailure.ReasonArtifactNotFound, err, "%s: the repository was not found", what)
	case errors.Is(err, git.ErrAuthenticationRequired), errors.Is(err, git.ErrAuthorizationFailed), errors.Is(err, git.ErrInvalidAuthMethod):
		return failure.New(sourcefailure.ReasonSourceUnauthorized, err, "%s: the server refused the credentials", what)
	case errors.Is(err, git.ErrEmptyRemoteRepository):
		return failure.New(sourcefailure.ReasonArtifactNotFound, err, "%s: the repository is empty", what)
	}
	if netFail := egress.NetworkFailure(err); netFail != "" {
		return failure.New(sourcefailure.ReasonSourceUnreachable, err, "%s: the server is unreachable (%s)", what, netFail)
	}
	return failure.New(sourcefailure.ReasonSourceUnreachable, err, "%s: %v", what, err)
}

// gitReasons are the reasons of the Git client's own failures.
var gitReasons = map[git.Kind]string{
	git.KindTooManyRefs:       sourcefailure.ReasonGitRefsTooMany,
	git.KindTooLarge:          sourcefailure.ReasonArtifactTooLarge,
	git.KindKnownHostsInvalid: credentials.ReasonCredentialsInvalid,
	git.KindRedirected:        sourcefailure.ReasonSourceInvalid,
	git.KindNotFound:          sourcefailure.ReasonArtifactNotFound,
	git.KindUnsupported:       sourcefailure.ReasonArtifactUnsupported,
}
