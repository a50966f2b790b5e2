package git

import (
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
)

// countingStorage is the memory storage of one Git fetch, bounded in the
// bytes of the objects it stores (--max-git-bytes): a whole object, as
// its pack entry's header claims it, is refused before it is inflated
// (go-git's parser writes whole objects through LazyWriter), and an object
// made from a delta is counted when it is stored. A fetch that passes the
// bound fails with KindTooLarge and its storage is dropped.
type countingStorage struct {
	*memory.Storage
	left, limit int64
}

func newCountingStorage(limit int64) *countingStorage {
	return &countingStorage{Storage: memory.NewStorage(), left: limit, limit: limit}
}

func (s *countingStorage) take(n int64) error {
	s.left -= n
	if s.left < 0 {
		return errorf(KindTooLarge, nil, "the objects of the commit are larger than the limit of %d bytes (--max-git-bytes)", s.limit)
	}
	return nil
}

// SetEncodedObject counts obj, then stores it.
func (s *countingStorage) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	if err := s.take(obj.Size()); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.Storage.SetEncodedObject(obj)
}

// LazyWriter lets go-git's pack parser write a whole object: the header
// function gets its type and size first, and refuses a size past the
// bound before a byte is inflated; Close stores the object.
func (s *countingStorage) LazyWriter() (io.WriteCloser, func(plumbing.ObjectType, int64) error, error) {
	w := &lazyObject{s: s, obj: &plumbing.MemoryObject{}}
	header := func(t plumbing.ObjectType, size int64) error {
		if err := s.take(size); err != nil {
			return err
		}
		w.obj.SetType(t)
		w.obj.SetSize(size)
		w.left = size
		return nil
	}
	return w, header, nil
}

// lazyObject is an object being written by the pack parser.
type lazyObject struct {
	s    *countingStorage
	obj  *plumbing.MemoryObject
	left int64
}

func (w *lazyObject) Write(p []byte) (int, error) {
	if int64(len(p)) > w.left {
		return 0, errorf(KindTooLarge, nil, "an object of the commit is larger than its header claims")
	}
	w.left -= int64(len(p))
	return w.obj.Write(p)
}

// Close stores the object, already counted.
func (w *lazyObject) Close() error {
	_, err := w.s.Storage.SetEncodedObject(w.obj)
	return err
}
