package git

import (
	"errors"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// readObjects reads the raw commit of req from storage, and the annotated
// tag object req.Ref names, if it names one: the fetch of a tag ref wants
// the tag object (the ref's value), so the server sends it with the
// commit; a lightweight tag's or a branch's ref names the commit itself.
func readObjects(storage storer.EncodedObjectStorer, req FetchRequest) (*Objects, error) {
	commit, err := rawObject(storage, plumbing.CommitObject, plumbing.NewHash(req.Commit))
	if err != nil {
		return nil, errorf(KindNotFound, err, "reading the commit object")
	}
	o := &Objects{Commit: commit}
	if req.Ref == "" {
		return o, nil
	}
	refs, ok := storage.(storer.ReferenceStorer)
	if !ok {
		return o, nil
	}
	ref, err := refs.Reference(plumbing.ReferenceName(req.Ref))
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return o, nil
	}
	if err != nil {
		return nil, errorf(KindNotFound, err, "reading the ref %s", req.Ref)
	}
	if ref.Type() != plumbing.HashReference || ref.Hash().String() == req.Commit {
		return o, nil
	}
	tag, err := rawObject(storage, plumbing.TagObject, ref.Hash())
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		// The ref names another commit than the one asked for (it moved
		// between the listing and the fetch): no tag of this commit.
		return o, nil
	}
	if err != nil {
		return nil, errorf(KindNotFound, err, "reading the tag object of %s", req.Ref)
	}
	o.TagID, o.Tag = ref.Hash().String(), tag
	return o, nil
}

// rawObject is the content of the object id of type kind in storage.
func rawObject(storage storer.EncodedObjectStorer, kind plumbing.ObjectType, id plumbing.Hash) ([]byte, error) {
	obj, err := storage.EncodedObject(kind, id)
	if err != nil {
		return nil, err
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// The object was counted in the storage's bytes when stored.
	return io.ReadAll(io.LimitReader(r, obj.Size()))
}
