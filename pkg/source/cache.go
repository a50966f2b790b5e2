package source

import (
	"hash"
	"io"
)

// The caches of a Fetcher: each getter misses and each setter does nothing
// when the caches are off (Options.CacheBytes < 0).

// getResolution is the digest a tag (OCI) was resolved to for key (URL,
// tag, credentials), within ResolveMaxAge.
func (f *Fetcher) getResolution(key string) (string, bool) {
	if f.resolutions == nil {
		return "", false
	}
	return f.resolutions.Get(key)
}

func (f *Fetcher) putResolution(key, digest string) {
	if f.resolutions != nil {
		f.resolutions.Put(key, digest)
	}
}

// getIndex is the index of a Helm repository fetched with key (URL,
// credentials), within ResolveMaxAge.
func (f *Fetcher) getIndex(key string) (*index, bool) {
	if f.indexes == nil {
		return nil, false
	}
	return f.indexes.Get(key)
}

func (f *Fetcher) putIndex(key string, idx *index) {
	if f.indexes != nil {
		f.indexes.Put(key, idx)
	}
}

// getContent is the artifact of digest, verified when it was fetched.
func (f *Fetcher) getContent(digest string) (*artifact, bool) {
	if f.contents == nil {
		return nil, false
	}
	return f.contents.Get(digest)
}

func (f *Fetcher) putContent(digest string, a *artifact) {
	if f.contents != nil {
		f.contents.Put(digest, a)
	}
}

// isConfirmed says whether the registry or repository let the credentials
// of key read the artifact of key within ResolveMaxAge.
func (f *Fetcher) isConfirmed(key string) bool {
	if f.confirmed == nil {
		return false
	}
	_, ok := f.confirmed.Get(key)
	return ok
}

func (f *Fetcher) confirm(key string) {
	if f.confirmed != nil {
		f.confirmed.Put(key, true)
	}
}

// teeLimit reads at most n bytes of r, writing them to h too.
func teeLimit(r io.Reader, h hash.Hash, n int64) io.Reader {
	return io.TeeReader(io.LimitReader(r, n), h)
}
