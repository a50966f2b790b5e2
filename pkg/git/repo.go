package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// MaxFiles bounds the files of a commit read.
const MaxFiles = 100_000

// Refs is a ref listing: ref name → commit (an annotated tag's peeled
// commit in place of the tag object).
type Refs map[string]string

// Size is what r takes in memory, about: what a cache counts it as.
func (r Refs) Size() int {
	n := 0
	for k, v := range r {
		n += len(k) + len(v) + 32
	}
	return n
}

// List lists the refs of the repository at url as auth sees it: branches,
// tags (an annotated tag as its commit) and the rest, at most
// auth.Limits.Refs of them (KindTooManyRefs, counted as they arrive and
// once listed).
func List(ctx context.Context, url string, auth *Auth) (Refs, error) {
	install()
	remote := gogit.NewRemote(nil, &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	list, err := remote.ListContext(ctx, &gogit.ListOptions{Auth: auth, PeelingOption: gogit.AppendPeeled})
	if err != nil {
		return nil, err
	}
	if limit := auth.Limits.Refs; limit > 0 && len(list) > limit {
		return nil, errorf(KindTooManyRefs, nil, "%s advertises %d refs, more than the limit of %d (--max-git-refs)", url, len(list), limit)
	}
	refs := Refs{}
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
	return refs, nil
}

// IsHash tells whether s is a full commit hash.
func IsHash(s string) bool { return plumbing.IsHash(s) && len(s) == 40 }

// BranchRef and TagRef are the full names of a branch and a tag.
func BranchRef(name string) string { return plumbing.NewBranchReferenceName(name).String() }

// TagRef is the full name of the tag name.
func TagRef(name string) string { return plumbing.NewTagReferenceName(name).String() }

// FetchRequest is one commit to fetch.
type FetchRequest struct {
	// URL is the repository's, Auth what it is fetched with.
	URL  string
	Auth *Auth
	// Commit is the commit's hash; Ref the full name of the ref it is
	// fetched from ("" for the commit alone, asked for by its hash, which
	// the server must allow), and Tip whether it is that ref's tip (depth
	// 1; else the ref's history is fetched).
	Commit, Ref string
	Tip         bool
	// Objects asks for the commit's object, and the annotated tag's when
	// Ref names one, in Commit.Objects: what a signature is verified on.
	Objects bool
}

// Commit is what a commit's tree holds: its regular files, by path, and
// its symbolic links and submodules, which are not read.
type Commit struct {
	Files []File
	Links []Link
	// Objects is the commit's object and its annotated tag's, when the
	// request asked for them (FetchRequest.Objects); nil otherwise.
	Objects *Objects
}

// Objects are the raw content of the Git objects a signature is verified
// on (what `git cat-file commit|tag ID` prints), read from the fetch's
// storage before it is dropped: counted in its bytes (--max-git-bytes).
type Objects struct {
	// Commit is the commit object's content.
	Commit []byte
	// TagID and Tag are the annotated tag object the request's Ref names
	// (its id and content); "" and nil when the ref is no annotated tag (a
	// lightweight tag, a branch) or the request has none.
	TagID string
	Tag   []byte
}

// File is a regular file of a commit.
type File struct {
	Name string
	Data []byte
}

// Link is a symbolic link or a submodule of a commit, by name, and what it
// is ("a symbolic link", "a submodule (gitlink)").
type Link struct {
	Name, What string
}

// Fetch fetches the commit of req into memory storage bounded by
// req.Auth.Limits.Bytes (KindTooLarge), and reads its tree (readTree).
func Fetch(ctx context.Context, req FetchRequest) (*Commit, error) {
	install()
	limit := req.Auth.Limits.Bytes
	if limit <= 0 {
		limit = math.MaxInt64
	}
	storage := newCountingStorage(limit)
	remote := gogit.NewRemote(storage, &config.RemoteConfig{Name: "origin", URLs: []string{req.URL}})
	var spec config.RefSpec
	depth := 1
	switch {
	case req.Tip:
		spec = config.RefSpec(fmt.Sprintf("+%s:%s", req.Ref, req.Ref))
	case req.Ref != "":
		// A commit behind the tip of its branch: the branch's history,
		// bounded by the storage's bytes.
		spec, depth = config.RefSpec(fmt.Sprintf("+%s:%s", req.Ref, req.Ref)), 0
	default:
		// A commit alone: asked for by its hash (the server must allow
		// it: uploadpack.allowReachableSHA1InWant, or protocol v2).
		spec = config.RefSpec(fmt.Sprintf("%s:refs/convoy/commit", req.Commit))
	}
	err := remote.FetchContext(ctx, &gogit.FetchOptions{RefSpecs: []config.RefSpec{spec}, Depth: depth, Auth: req.Auth, Tags: gogit.NoTags})
	if err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return nil, err
	}
	raw, err := rawObject(storage, plumbing.CommitObject, plumbing.NewHash(req.Commit))
	if err != nil {
		return nil, errorf(KindNotFound, err, "the commit is not in what the server sent (a commit not on %s?)", refOrAny(req.Ref))
	}
	tree, err := commitTree(storage, raw)
	if err != nil {
		return nil, errorf(KindUnsupported, err, "reading the commit's tree")
	}
	c, err := readTree(tree, limit)
	if err != nil || !req.Objects {
		return c, err
	}
	if c.Objects, err = readObjects(storage, req); err != nil {
		return nil, err
	}
	return c, nil
}

// commitTree is the tree of the commit whose content is raw: its first
// line, "tree ID", read without decoding the commit (go-git's decoder
// copies a gpgsig header once per line: a hostile commit with a header of
// 10 MiB would keep it busy for hours).
func commitTree(storage storer.EncodedObjectStorer, raw []byte) (*object.Tree, error) {
	first, _, _ := bytes.Cut(raw, []byte("\n"))
	id, ok := bytes.CutPrefix(first, []byte("tree "))
	if !ok || !IsHash(string(id)) {
		return nil, errors.New("the commit's first line names no tree")
	}
	return object.GetTree(storage, plumbing.NewHash(string(id)))
}

// refOrAny is ref, or "any ref" when there is none.
func refOrAny(ref string) string {
	if ref == "" {
		return "any ref"
	}
	return ref
}

// readTree reads the regular files of tree, by path, within limit bytes
// (--max-git-bytes: they are what the fetch stored, inflated) and MaxFiles
// files: the blob's size is checked before it is read. Symbolic links and
// submodules are not read; their paths are kept (Commit.Links) so that the
// caller may refuse a directory that holds one.
func readTree(tree *object.Tree, limit int64) (*Commit, error) {
	c := &Commit{}
	left := limit
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, errorf(KindUnsupported, err, "walking the tree")
		}
		switch entry.Mode {
		case filemode.Dir:
			continue
		case filemode.Symlink:
			c.Links = append(c.Links, Link{Name: name, What: "a symbolic link"})
			continue
		case filemode.Submodule:
			c.Links = append(c.Links, Link{Name: name, What: "a submodule (gitlink)"})
			continue
		case filemode.Regular, filemode.Executable, filemode.Deprecated:
		default:
			continue
		}
		if len(c.Files) == MaxFiles {
			return nil, errorf(KindTooLarge, nil, "the commit holds more than %d files", MaxFiles)
		}
		file, err := tree.TreeEntryFile(&entry)
		if err != nil {
			return nil, errorf(KindUnsupported, err, "file %s", name)
		}
		if file.Size > left {
			return nil, errorf(KindTooLarge, nil, "the files of the commit are larger than the limit of %d bytes (--max-git-bytes): file %s is %d bytes, %d are left",
				limit, name, file.Size, left)
		}
		// Read once into the bytes kept (Contents would copy it to a
		// string first), no more than the blob's size.
		data, err := readBlob(file)
		if err != nil {
			return nil, errorf(KindUnsupported, err, "file %s", name)
		}
		left -= int64(len(data))
		c.Files = append(c.Files, File{Name: name, Data: data})
	}
	slices.SortFunc(c.Files, func(x, y File) int { return strings.Compare(x.Name, y.Name) })
	return c, nil
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
