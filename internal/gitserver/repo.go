// Package gitserver holds Git repositories for the tests and `make run`, and
// serves them on 127.0.0.1 with git's own smart-HTTP server: `git
// http-backend` behind net/http/cgi. It builds bare repositories with the git
// CLI's plumbing (hash-object, mktree, commit-tree, update-ref), never with a
// work tree, and with fixed names and dates, so that the same content gives
// the same commit sha on every run (unless it signs them: Repo.Signing, with
// keys of ssh-keygen or gpg). The server can ask for basic authentication,
// answer slowly, be down, and records the requests it got.
//
// It speaks no Git protocol of its own: every byte of Git on the wire comes
// from git. It is for the tests and `make run` only, and is never part of the
// convoy-apiserver binary.
package gitserver

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Git modes of tree entries.
const (
	modeFile    = "100644"
	modeSymlink = "120000"
	modeGitlink = "160000"
	modeTree    = "040000"
)

// DefaultSignature signs commits and annotated tags when a Repo does not say
// otherwise.
var DefaultSignature = Signature{
	Name:  "Convoy Test",
	Email: "test@convoy.invalid",
	When:  time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
}

// Signature is who made a commit or a tag, and when.
type Signature struct {
	Name, Email string
	When        time.Time
}

// orDefault is s with each zero field taken from DefaultSignature.
func (s Signature) orDefault() Signature {
	if s.Name == "" {
		s.Name = DefaultSignature.Name
	}
	if s.Email == "" {
		s.Email = DefaultSignature.Email
	}
	if s.When.IsZero() {
		s.When = DefaultSignature.When
	}
	return s
}

// date is s.When in git's internal format, "<unix seconds> <+hhmm>".
func (s Signature) date() string {
	return fmt.Sprintf("%d %s", s.When.Unix(), s.When.Format("-0700"))
}

// Repo is a bare repository on disk.
type Repo struct {
	// Dir is the bare repository.
	Dir string
	// Name is its name under the server's root, e.g. "apps.git".
	Name string
	// Author and Committer sign commits (Committer is also the tagger of
	// annotated tags). Zero fields are DefaultSignature's.
	Author, Committer Signature
	// Signing, when set, signs the commits (Commit) and annotated tags
	// (AnnotatedTag) made after it is set, with git's own signing.
	Signing *Signing
}

// Tree is the content of a commit. Paths are slash-separated and relative;
// the directories on the way are made as needed. A path is in at most one of
// the maps, and is not a directory of another path.
type Tree struct {
	// Files maps a path to the content of a regular file (mode 100644).
	Files map[string]string
	// Symlinks maps a path to the target of a symbolic link (mode 120000).
	Symlinks map[string]string
	// Submodules maps a path to a commit sha (a gitlink, mode 160000). The
	// commit need not exist; add a .gitmodules to Files if the test needs
	// one.
	Submodules map[string]string
}

// InitBare creates the bare repository root/name (git init --bare -b main).
// name is a relative path, such as "apps.git" or "team/apps.git".
func InitBare(root, name string) (*Repo, error) {
	if !filepath.IsLocal(name) || filepath.ToSlash(filepath.Clean(name)) != name {
		return nil, fmt.Errorf("repository name %q: not a clean relative path", name)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("repository root %q: %w", root, err)
	}
	dir := filepath.Join(abs, filepath.FromSlash(name))
	if _, err := runGit("", nil, nil, "init", "--quiet", "--bare", "-b", "main", dir); err != nil {
		return nil, err
	}
	return &Repo{Dir: dir, Name: name}, nil
}

// Commit commits tree on branch with message, its parent being the branch's
// tip if the branch exists, and moves the branch to it. It returns the
// commit's sha.
func (r *Repo) Commit(branch string, tree Tree, message string) (string, error) {
	root, err := buildTree(tree)
	if err != nil {
		return "", err
	}
	treeSHA, err := r.writeTree(root, map[string]string{})
	if err != nil {
		return "", err
	}
	ref := "refs/heads/" + branch
	parent, err := r.resolve(ref + "^{commit}")
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree", treeSHA}
	if r.Signing != nil {
		args = append(args, "-S")
	}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	if message == "" || message[len(message)-1] != '\n' {
		message += "\n"
	}
	sha, err := r.git([]byte(message), args...)
	if err != nil {
		return "", err
	}
	// The old value makes update-ref refuse a branch that moved meanwhile
	// (or, when empty, that was created meanwhile).
	if _, err := r.git(nil, "update-ref", "-m", "gitserver: commit", ref, sha, parent); err != nil {
		return "", err
	}
	return sha, nil
}

// Tag makes the lightweight tag name point to sha.
func (r *Repo) Tag(name, sha string) error {
	_, err := r.git(nil, "tag", name, sha)
	return err
}

// SetRef points the full ref name (refs/pull/7/head, as a forge keeps a
// pull request's head) at sha.
func (r *Repo) SetRef(name, sha string) error {
	_, err := r.git(nil, "update-ref", "-m", "gitserver: set", name, sha)
	return err
}

// DeleteRef deletes the full ref name.
func (r *Repo) DeleteRef(name string) error {
	_, err := r.git(nil, "update-ref", "-d", name)
	return err
}

// AnnotatedTag makes an annotated tag name of sha with message, tagged by
// r.Committer (and signed with r.Signing when set).
func (r *Repo) AnnotatedTag(name, sha, message string) error {
	kind := "--annotate"
	if r.Signing != nil {
		kind = "--sign"
	}
	_, err := r.git(nil, "tag", kind, "--cleanup=verbatim", "--message", message, name, sha)
	return err
}

// SetConfig sets key to value in the repository's config, e.g.
// uploadpack.allowReachableSHA1InWant true.
func (r *Repo) SetConfig(key, value string) error {
	_, err := r.git(nil, "config", key, value)
	return err
}

// resolve is the sha rev names, or "" when it names nothing.
func (r *Repo) resolve(rev string) (string, error) {
	out, err := r.git(nil, "rev-parse", "--quiet", "--verify", rev)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 && out == "" {
		return "", nil
	}
	return out, err
}

// git runs git in the repository with the signatures of r.
func (r *Repo) git(stdin []byte, args ...string) (string, error) {
	author, committer := r.Author.orDefault(), r.Committer.orDefault()
	env := []string{
		"GIT_AUTHOR_NAME=" + author.Name,
		"GIT_AUTHOR_EMAIL=" + author.Email,
		"GIT_AUTHOR_DATE=" + author.date(),
		"GIT_COMMITTER_NAME=" + committer.Name,
		"GIT_COMMITTER_EMAIL=" + committer.Email,
		"GIT_COMMITTER_DATE=" + committer.date(),
	}
	if r.Signing != nil {
		args = append(r.Signing.config(), args...)
		env = append(env, r.Signing.env()...)
	}
	return runGit(r.Dir, env, stdin, args...)
}

// baseEnv is the environment of every git this package runs: PATH and
// nothing else of the process's, and no system or global config.
func baseEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"LC_ALL=C",
	}
}

// runGit runs git (in gitDir when set) with baseEnv and env, and returns its
// standard output without the trailing newline.
func runGit(gitDir string, env []string, stdin []byte, args ...string) (string, error) {
	if gitDir != "" {
		args = append([]string{"--git-dir", gitDir}, args...)
	}
	return run(env, stdin, "git", args...)
}

// run runs name with args, baseEnv and env, and stdin when not nil, and
// returns its standard output without the trailing newline (also when it
// fails).
func run(env []string, stdin []byte, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(baseEnv(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := strings.TrimSuffix(stdout.String(), "\n")
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// node is an entry of a tree being built: a leaf (mode, and content or sha)
// or, with children, a directory.
type node struct {
	mode     string
	content  string // a file's content or a link's target
	sha      string // a gitlink's commit
	children map[string]*node
}

// buildTree is tree as nested directories, with every path checked.
func buildTree(tree Tree) (*node, error) {
	root := &node{mode: modeTree, children: map[string]*node{}}
	add := func(kind string, entries map[string]string, leaf func(string) *node) error {
		for _, p := range slices.Sorted(maps.Keys(entries)) {
			if err := root.insert(p, leaf(entries[p])); err != nil {
				return fmt.Errorf("%s %q: %w", kind, p, err)
			}
		}
		return nil
	}
	if err := add("file", tree.Files, func(v string) *node { return &node{mode: modeFile, content: v} }); err != nil {
		return nil, err
	}
	if err := add("symlink", tree.Symlinks, func(v string) *node { return &node{mode: modeSymlink, content: v} }); err != nil {
		return nil, err
	}
	if err := add("submodule", tree.Submodules, func(v string) *node { return &node{mode: modeGitlink, sha: v} }); err != nil {
		return nil, err
	}
	return root, nil
}

// insert puts leaf at p under the directory n, making the directories on
// the way.
func (n *node) insert(p string, leaf *node) error {
	elems := strings.Split(p, "/")
	for _, e := range elems {
		if e == "" || e == "." || e == ".." || strings.ContainsRune(e, 0) {
			return errors.New("not a clean relative path")
		}
	}
	dir := n
	for _, e := range elems[:len(elems)-1] {
		child, ok := dir.children[e]
		switch {
		case !ok:
			child = &node{mode: modeTree, children: map[string]*node{}}
			dir.children[e] = child
		case child.children == nil:
			return fmt.Errorf("%q is not a directory", e)
		}
		dir = child
	}
	last := elems[len(elems)-1]
	if _, ok := dir.children[last]; ok {
		return errors.New("given twice, or also a directory")
	}
	dir.children[last] = leaf
	return nil
}

// writeTree writes the blobs and trees of the directory n (git hash-object,
// git mktree) and returns its tree's sha. blobs maps content already written
// to its sha.
func (r *Repo) writeTree(n *node, blobs map[string]string) (string, error) {
	var in bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(n.children)) {
		child := n.children[name]
		var kind, sha string
		var err error
		switch child.mode {
		case modeTree:
			kind = "tree"
			sha, err = r.writeTree(child, blobs)
		case modeGitlink:
			kind, sha = "commit", child.sha
		default:
			kind = "blob"
			sha, err = r.writeBlob(child.content, blobs)
		}
		if err != nil {
			return "", err
		}
		// mktree -z: "<mode> SP <type> SP <sha> TAB <name> NUL".
		fmt.Fprintf(&in, "%s %s %s\t%s\x00", child.mode, kind, sha, name)
	}
	return r.git(in.Bytes(), "mktree", "-z")
}

// writeBlob writes content as a blob, once, and returns its sha.
func (r *Repo) writeBlob(content string, blobs map[string]string) (string, error) {
	if sha, ok := blobs[content]; ok {
		return sha, nil
	}
	sha, err := r.git([]byte(content), "hash-object", "-w", "--no-filters", "--stdin")
	if err != nil {
		return "", err
	}
	blobs[content] = sha
	return sha, nil
}

// TreeFromDir is a Tree of the regular files under dir, by their paths
// relative to dir. Empty directories vanish (Git has none); a symbolic link
// or any other file that is neither regular nor a directory is an error.
func TreeFromDir(dir string) (Tree, error) {
	tree := Tree{Files: map[string]string{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: not a regular file", p)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		tree.Files[path.Clean(filepath.ToSlash(rel))] = string(data)
		return nil
	})
	if err != nil {
		return Tree{}, fmt.Errorf("reading a tree from %s: %w", dir, err)
	}
	return tree, nil
}
