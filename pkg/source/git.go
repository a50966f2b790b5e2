package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// KindGitRepository is the kind of a ResolvedSource of a Git repository.
const KindGitRepository = "GitRepository"

// maxGitFiles bounds the files of a commit read.
const maxGitFiles = 100_000

// Reasons of Git sources beside the sources' own.
var (
	ReasonGitHostKeyRefused = failure.Declare(failure.Reason{
		Name: "GitHostKeyRefused", Class: failure.ClassInvalid, Shows: []failure.Where{failure.InSync, failure.Response}, Refusal: true,
		Means:  "the SSH server presented a host key that the known_hosts of the Release's secretRef does not list for its host (or revokes): the server may be impersonated",
		Action: "check the server's host key out of band, then correct known_hosts in the Secret",
	})
	ReasonGitRefsTooMany = failure.Declare(failure.Reason{
		Name: "GitRefsTooMany", Class: failure.ClassOverLimit, Shows: []failure.Where{failure.InSync, failure.Response}, Refusal: true,
		Means:  "the repository advertises more refs than --max-git-refs",
		Action: "raise --max-git-refs, or serve the manifests from a repository with fewer refs",
	})
)

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

// gitRefs is a ref listing: ref name → commit (an annotated tag's peeled
// commit in place of the tag object).
type gitRefs map[string]string

func (r gitRefs) size() int {
	n := 0
	for k, v := range r {
		n += len(k) + len(v) + 32
	}
	return n
}

// checkGitURL refuses a URL that is not https or ssh (plain http only to
// loopback with AllowLoopback: the transport's guard refuses it
// otherwise), that holds a password, or whose ssh user is the only
// credential.
func checkGitURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || strings.Trim(u.Path, "/") == "" {
		return nil, failure.New(ReasonSourceInvalid, nil, "%s is not a URL of a Git repository (https://HOST/PATH or ssh://HOST/PATH)", redactURL(raw))
	}
	switch u.Scheme {
	case "https", "http":
		if err := refuseUserinfo(raw); err != nil {
			return nil, err
		}
	case "ssh":
		if _, has := u.User.Password(); has {
			return nil, failure.New(ReasonSourceInvalid, nil, "%s: the URL must not hold a password: use secretRef", redactURL(raw))
		}
	default:
		return nil, failure.New(ReasonSourceInvalid, nil, "%s: a Git source is https:// or ssh:// (the scheme %q is not supported)", redactURL(raw), u.Scheme)
	}
	return u, nil
}

// redactURL is raw without its user information.
func redactURL(raw string) string {
	r, _ := withoutUserinfo(raw)
	return r
}

// resolveGit lists the refs of the repository (one listing per URL and
// credentials per ResolveMaxAge, shared by every Release that names them)
// and picks the commit of src.Ref from it: a branch, a tag (peeled), the
// highest tag that meets a semver range, or a commit (whose access the
// listing by these credentials confirms).
func (f *Fetcher) resolveGit(ctx context.Context, namespace string, src *convoyv1alpha1.GitRepositorySource, inputs Inputs) (*gitResolution, error) {
	u, err := checkGitURL(src.URL)
	if err != nil {
		return nil, err
	}
	creds, err := f.gitCredentials(ctx, inputs, namespace, src, u)
	if err != nil {
		return nil, err
	}
	refs, err := f.listGitRefs(ctx, namespace, src.URL, creds)
	if err != nil {
		return nil, err
	}
	r := &gitResolution{url: src.URL, creds: creds}
	ref := src.Ref
	switch {
	case ref.Commit != "":
		if !plumbing.IsHash(ref.Commit) || len(ref.Commit) != 40 {
			return nil, failure.New(ReasonSourceInvalid, nil, "%s: commit %q is not a full commit hash (40 hex digits)", src.URL, ref.Commit)
		}
		r.commit = strings.ToLower(ref.Commit)
		if ref.Branch != "" {
			r.ref = plumbing.NewBranchReferenceName(ref.Branch).String()
			if _, ok := refs[r.ref]; !ok {
				return nil, failure.New(ReasonArtifactNotFound, nil, "%s: no branch %s to fetch commit %s from", src.URL, ref.Branch, r.commit)
			}
		}
		r.tip = r.ref != "" && refs[r.ref] == r.commit
	case ref.Branch != "":
		r.ref = plumbing.NewBranchReferenceName(ref.Branch).String()
	case ref.Tag != "":
		r.ref = plumbing.NewTagReferenceName(ref.Tag).String()
	case ref.SemVer != "":
		if r.ref, err = pickTag(src.URL, ref.SemVer, refs); err != nil {
			return nil, err
		}
	default:
		return nil, failure.New(ReasonSourceInvalid, nil, "%s: ref names no branch, tag, semver or commit", src.URL)
	}
	if r.commit == "" {
		c, ok := refs[r.ref]
		if !ok {
			return nil, failure.New(ReasonArtifactNotFound, nil, "%s: no ref %s", src.URL, r.ref)
		}
		r.commit, r.tip = c, true
	}
	r.resolved = &subresourcesv1alpha1.ResolvedSource{Kind: KindGitRepository, URL: src.URL, Ref: r.ref, Commit: r.commit}
	return r, nil
}

// pickTag is the tag of refs whose name is the highest version that meets
// the range want, as Helm repository versions are picked: prereleases only
// when the range names one (Masterminds/semver's rule).
func pickTag(repo, want string, refs gitRefs) (string, error) {
	c, err := semver.NewConstraint(want)
	if err != nil {
		return "", failure.New(ReasonSourceInvalid, err, "%s: semver %q is not a version range", repo, want)
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
		return "", failure.New(ReasonArtifactNotFound, nil, "%s: no tag meets semver %q", repo, want)
	}
	return bestRef, nil
}

// listGitRefs is the ref listing of repo as creds see it, kept for
// ResolveMaxAge: a listing is what confirms that these credentials may
// read the repository, so a commit fetched for others is served from the
// content cache only to credentials whose own listing succeeded.
func (f *Fetcher) listGitRefs(ctx context.Context, namespace, repo string, creds *gitCredentials) (gitRefs, error) {
	key := "git\x00" + repo + "\x00" + creds.key
	if f.gitListings != nil {
		if refs, ok := f.gitListings.Get(key); f.lookedUp(agecache.CacheResolve, ok) {
			return refs, nil
		}
	}
	v, err := f.shared(ctx, namespace, "gitlist\x00"+key, func(ctx context.Context) (any, error) {
		if f.gitListings != nil {
			if refs, ok := f.gitListings.Get(key); ok {
				return refs, nil
			}
		}
		remote := git.NewRemote(nil, &config.RemoteConfig{Name: "origin", URLs: []string{repo}})
		list, err := remote.ListContext(ctx, &git.ListOptions{Auth: creds.auth, PeelingOption: git.AppendPeeled})
		if err != nil {
			return nil, gitFailure(repo+": listing the refs", err)
		}
		if len(list) > f.opts.MaxGitRefs {
			return nil, failure.New(ReasonGitRefsTooMany, nil, "%s advertises %d refs, more than the limit of %d (--max-git-refs)", repo, len(list), f.opts.MaxGitRefs)
		}
		refs := gitRefs{}
		for _, r := range list {
			if r.Type() != plumbing.HashReference {
				continue
			}
			name := r.Name().String()
			if peeled, ok := strings.CutSuffix(name, "^{}"); ok {
				// An annotated tag: its commit, not the tag object.
				refs[peeled] = r.Hash().String()
				continue
			}
			if _, seen := refs[name]; !seen {
				refs[name] = r.Hash().String()
			}
		}
		if f.gitListings != nil {
			f.gitListings.Put(key, refs)
		}
		return refs, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(gitRefs), nil
}

// git fetches the directory of a Git source: it resolves the ref (one
// listing), then serves the commit's files from the content cache (by URL
// and commit), or fetches the commit once: depth 1, that ref only, no
// tags, into memory storage that counts its bytes, and reads its files from
// the tree objects, never a checkout.
func (f *Fetcher) git(ctx context.Context, namespace string, src *convoyv1alpha1.GitRepositorySource, inputs Inputs) (*Source, error) {
	dir, err := CleanPath(src.Path)
	if err != nil {
		return nil, err
	}
	r, err := f.resolveGit(ctx, namespace, src, inputs)
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("%s@%s", src.URL, r.commit)
	if r.ref != "" {
		where = fmt.Sprintf("%s %s@%s", src.URL, r.ref, r.commit)
	}
	out := &Source{Where: where, Path: dir, Resolved: r.resolved}
	content := contentKey("git\x00"+src.URL, r.commit)
	// The listing of these credentials, just now or within ResolveMaxAge,
	// confirmed their access to the repository.
	a, ok := f.getContent(content)
	if !f.lookedUp(agecache.CacheSource, ok) {
		v, err := f.shared(ctx, namespace, "gitfetch\x00"+content+"\x00"+r.creds.key, func(ctx context.Context) (any, error) {
			if a, ok := f.getContent(content); ok {
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
		a = v.(*artifact)
	}
	if out.Links, err = checkLinks(where, a.links, dir); err != nil {
		return nil, err
	}
	if out.Files, out.Omitted, err = selectGitFiles(where, a.files, dir, int64(f.opts.MaxArtifactBytes)); err != nil {
		return nil, err
	}
	return out, nil
}

// selectGitFiles chooses the files of a commit a render gets, within
// limit bytes and maxBundleFiles files: every file under dir (more is
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
		if len(out) == maxBundleFiles {
			return nil, nil, failure.New(ReasonArtifactTooLarge, nil, "%s: path %s holds more than %d files", where, dir, maxBundleFiles)
		}
		if int64(len(file.Data)) > left {
			return nil, nil, failure.New(ReasonArtifactTooLarge, nil, "%s: the files of path %s are larger than the limit of %d bytes (--max-artifact-bytes): file %s is %d bytes, %d are left",
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
		if len(out) == maxBundleFiles || int64(len(file.Data)) > left {
			omitted = append(omitted, file.Name)
			continue
		}
		left -= int64(len(file.Data))
		out = append(out, file)
	}
	slices.SortFunc(out, func(x, y File) int { return strings.Compare(x.Name, y.Name) })
	return out, omitted, nil
}

// fetchGit fetches r's commit and reads its tree.
func (f *Fetcher) fetchGit(ctx context.Context, r *gitResolution, where string) (*artifact, error) {
	storage := newCountingStorage(int64(f.opts.MaxGitBytes))
	remote := git.NewRemote(storage, &config.RemoteConfig{Name: "origin", URLs: []string{r.url}})
	var spec config.RefSpec
	depth := 1
	switch {
	case r.tip:
		spec = config.RefSpec(fmt.Sprintf("+%s:%s", r.ref, r.ref))
	case r.ref != "":
		// A commit behind the tip of its branch: the branch's history,
		// bounded by the storage's bytes.
		spec, depth = config.RefSpec(fmt.Sprintf("+%s:%s", r.ref, r.ref)), 0
	default:
		// A commit alone: asked for by its hash (the server must allow
		// it: uploadpack.allowReachableSHA1InWant, or protocol v2).
		spec = config.RefSpec(fmt.Sprintf("%s:refs/convoy/commit", r.commit))
	}
	err := remote.FetchContext(ctx, &git.FetchOptions{RefSpecs: []config.RefSpec{spec}, Depth: depth, Auth: r.creds.auth, Tags: git.NoTags})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		if f, ok := failure.As(err); ok {
			return nil, f
		}
		if r.ref == "" && egress.NetworkFailure(err) == "" {
			// Git says "not our ref" in its own words only.
			return nil, failure.New(ReasonArtifactNotFound, err, "%s: the server did not send commit %s asked for by its hash (it must be reachable, and the server must allow it: uploadpack.allowReachableSHA1InWant; or name the branch to fetch it from)", where, r.commit)
		}
		return nil, gitFailure(where+": fetching the commit", err)
	}
	commit, err := object.GetCommit(storage, plumbing.NewHash(r.commit))
	if err != nil {
		return nil, failure.New(ReasonArtifactNotFound, err, "%s: the commit is not in what the server sent (a commit not on %s?)", where, orAny(r.ref))
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, failure.New(ReasonArtifactUnsupported, err, "%s: reading the commit's tree", where)
	}
	return readGitTree(where, tree, int64(f.opts.MaxGitBytes))
}

func orAny(ref string) string {
	if ref == "" {
		return "any ref"
	}
	return ref
}

// readGitTree reads the regular files of tree, by path, within limit
// bytes (--max-git-bytes: they are what the fetch stored, inflated) and
// maxGitFiles files: the blob's size is checked before it is read.
// Symbolic links and submodules are not read; their paths are kept
// (artifact.links) so that a directory that holds one is refused
// (checkLinks). The content cache keeps the whole commit; each
// render gets the files selectGitFiles chooses for its path.
func readGitTree(where string, tree *object.Tree, limit int64) (*artifact, error) {
	a := &artifact{}
	left := limit
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, failure.New(ReasonArtifactUnsupported, err, "%s: walking the tree", where)
		}
		switch entry.Mode {
		case filemode.Dir:
			continue
		case filemode.Symlink:
			a.links = append(a.links, link{name: name, what: "a symbolic link"})
			continue
		case filemode.Submodule:
			a.links = append(a.links, link{name: name, what: "a submodule (gitlink)"})
			continue
		case filemode.Regular, filemode.Executable, filemode.Deprecated:
		default:
			continue
		}
		if len(a.files) == maxGitFiles {
			return nil, failure.New(ReasonArtifactTooLarge, nil, "%s: the commit holds more than %d files", where, maxGitFiles)
		}
		file, err := tree.TreeEntryFile(&entry)
		if err != nil {
			return nil, failure.New(ReasonArtifactUnsupported, err, "%s: file %s", where, name)
		}
		if file.Size > left {
			return nil, failure.New(ReasonArtifactTooLarge, nil, "%s: the files of the commit are larger than the limit of %d bytes (--max-git-bytes): file %s is %d bytes, %d are left",
				where, limit, name, file.Size, left)
		}
		// Read once into the bytes kept (Contents would copy it to a
		// string first), no more than the blob's size.
		data, err := readBlob(file)
		if err != nil {
			return nil, failure.New(ReasonArtifactUnsupported, err, "%s: file %s", where, name)
		}
		left -= int64(len(data))
		a.files = append(a.files, File{Name: name, Where: where + " file " + name, Data: data})
	}
	slices.SortFunc(a.files, func(x, y File) int { return strings.Compare(x.Name, y.Name) })
	return a, nil
}

// readBlob reads the content of file, at most the size its object claims.
func readBlob(file *object.File) ([]byte, error) {
	r, err := file.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data := make([]byte, 0, file.Size)
	buf := bytes.NewBuffer(data)
	if _, err := io.Copy(buf, io.LimitReader(r, file.Size)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gitFailure is the failure of a request to a Git server.
func gitFailure(what string, err error) error {
	if f, ok := failure.As(err); ok {
		return failure.Quiet(f.Reason, err, "%s: %s", what, f.Message)
	}
	if hk, ok := errors.AsType[*hostKeyError](err); ok {
		return failure.New(ReasonGitHostKeyRefused, err, "%s: %s", what, hk.Error())
	}
	switch {
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return failure.New(ReasonArtifactNotFound, err, "%s: the repository was not found", what)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed), errors.Is(err, transport.ErrInvalidAuthMethod):
		return failure.New(ReasonSourceUnauthorized, err, "%s: the server refused the credentials", what)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return failure.New(ReasonArtifactNotFound, err, "%s: the repository is empty", what)
	}
	if netFail := egress.NetworkFailure(err); netFail != "" {
		return failure.New(ReasonSourceUnreachable, err, "%s: the server is unreachable (%s)", what, netFail)
	}
	return failure.New(ReasonSourceUnreachable, err, "%s: %v", what, err)
}
