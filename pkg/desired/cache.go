package desired

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/revision"
)

// DefaultRenderCacheBytes bounds the renders a RenderCache keeps, by the
// size of their compressed JSON.
const DefaultRenderCacheBytes = 64 << 20

var (
	configMapsResource = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretsResource    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// RenderCache keeps fresh renders keyed by everything they depend on: the
// Release (its UID and a hash of the spec fields a render reads: all but
// syncPolicy and healthAssessment, so that a change of interval or of the
// health rules renders nothing again), the identity and target cluster
// (the target's REST mapper scopes namespaces), and the resourceVersions of
// its inputs (the source ConfigMap and every valuesFrom object), which a
// shared metadata-only LIST of the Release's namespace tells without reading
// them. A render is reused while all are equal, for at most maxAge; a
// Release whose inputs cannot be listed is rendered every time. It holds at
// most maxBytes of renders (their compressed JSON), least recently used
// dropped. It is safe for concurrent use.
type RenderCache struct {
	entries *agecache.Cache[string, cachedRender]
}

// cachedRender is a render kept as its objects' JSON (a JSON array),
// compressed with DEFLATE: the objects of a render repeat their labels,
// names and shapes, so it takes a fraction of the JSON; a hit inflates and
// decodes it again (BenchmarkRenderCacheHit measures it).
type cachedRender struct {
	ref        string
	renderSize int // the render's Size
	jsonSize   int // the size of data inflated
	data       []byte
	resolved   *subresourcesv1alpha1.ResolvedSource
	// valuesResolved is the render's ValuesResolved.
	valuesResolved *subresourcesv1alpha1.ResolvedSource
}

// NewRenderCache returns a RenderCache of at most maxBytes whose renders
// are reused for at most maxAge.
func NewRenderCache(maxBytes int, maxAge time.Duration, clk clock.PassiveClock) *RenderCache {
	return &RenderCache{entries: agecache.New[string, cachedRender](maxBytes, maxAge, clk, func(r cachedRender) int { return len(r.data) })}
}

// Renderer returns a Renderer that renders with next and reuses the renders
// of this cache for the Releases that act with access.
func (c *RenderCache) Renderer(next Renderer, access *cluster.Access) Renderer {
	return cachingRenderer{cache: c, next: next, access: access}
}

type cachingRenderer struct {
	cache  *RenderCache
	next   Renderer
	access *cluster.Access
}

// Render implements Renderer.
func (r cachingRenderer) Render(ctx context.Context, release *convoyv1alpha1.Release) (*render.Render, error) {
	key, ok := r.cache.key(ctx, r.next, r.access, release)
	if ok {
		if cached, hit := r.cache.get(key); hit {
			return cached, nil
		}
	}
	out, err := r.next.Render(ctx, release)
	if err == nil && ok {
		r.cache.put(key, out)
	}
	return out, err
}

// SourceResolver is a Renderer that tells what the source of a Release
// resolves to now (render.Renderer.ResolveSource): the digest of an OCI or
// Helm repository source, the commit of a Git source, "" for a ConfigMap.
type SourceResolver interface {
	ResolveSource(ctx context.Context, release *convoyv1alpha1.Release) (string, error)
}

// ValuesSourceResolver is a Renderer that tells what the values source of a
// Release (spec.valuesSource) resolves to now
// (render.Renderer.ResolveValuesSource).
type ValuesSourceResolver interface {
	ResolveValuesSource(ctx context.Context, release *convoyv1alpha1.Release) (string, error)
}

// input is an object a render reads, by resource and name; optional when
// the render goes on without it (valuesFrom optional).
type input struct {
	resource schema.GroupVersionResource
	name     string
	optional bool
}

// key is the key of release's render, false when the resourceVersions of
// its inputs cannot be had from a LIST, or its source cannot be resolved
// (the render then says why). A source in a registry or a repository is
// keyed by the digest it resolves to now (next resolves it, which costs a
// request per tag or index and credentials per --source-resolve-max-age at
// most) and by its Secrets (credentials, certificates, the keys its
// signature is verified with); so is spec.valuesSource, when an entry of
// valuesFiles reads it (next.ResolveValuesSource).
func (c *RenderCache) key(ctx context.Context, next Renderer, access *cluster.Access, release *convoyv1alpha1.Release) (string, bool) {
	src := release.Spec.Source
	if access.HomeSnapshots == nil {
		return "", false
	}
	spec, err := renderSpecHash(&release.Spec)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s/%s/%s", release.UID, spec, access.Identity.UserName(), access.Target.Name)
	if rev := revision.From(ctx); rev != "" {
		// Another revision's render names it in its resolvedSource: it is
		// never served to the loops, nor theirs to a revision.
		fmt.Fprintf(&b, "/revision=%q", rev)
	}
	inputs, ok := sourceInputs(src)
	if !ok {
		return "", false
	}
	if src.ConfigMap == nil {
		resolver, ok := next.(SourceResolver)
		if !ok {
			return "", false
		}
		digest, err := resolver.ResolveSource(ctx, release)
		if err != nil {
			return "", false
		}
		fmt.Fprintf(&b, "/source@%s", digest)
	}
	if render.ReadsValuesSource(release) {
		// The values source is keyed as the source is: its revision now and
		// its Secrets (or its ConfigMap); a moved values branch renders
		// again.
		vs := release.Spec.ValuesSource
		if vs == nil {
			return "", false // the render fails: nothing to keep
		}
		vin, ok := sourceInputs(convoyv1alpha1.ReleaseSource{ConfigMap: vs.ConfigMap, OCIRepository: vs.OCIRepository, Git: vs.Git})
		if !ok {
			return "", false
		}
		inputs = append(inputs, vin...)
		if vs.ConfigMap == nil {
			resolver, ok := next.(ValuesSourceResolver)
			if !ok {
				return "", false
			}
			digest, err := resolver.ResolveValuesSource(ctx, release)
			if err != nil {
				return "", false
			}
			fmt.Fprintf(&b, "/values@%s", digest)
		}
	}
	if content := release.Spec.Content; content != nil {
		for _, v := range content.ValuesFrom {
			res := configMapsResource
			if v.Kind == "Secret" {
				res = secretsResource
			}
			inputs = append(inputs, input{resource: res, name: v.Name, optional: v.Optional})
		}
	}
	for _, in := range inputs {
		snap, err := access.HomeSnapshots.Get(ctx, in.resource, release.Namespace)
		if err != nil {
			return "", false
		}
		rv, seen := snap.ResourceVersion(in.name) // "" for a missing one
		if !seen && !in.optional {
			// The render fails without it, unless it was made after the
			// LIST: a render of it must not be kept under its absence.
			return "", false
		}
		fmt.Fprintf(&b, "/%s:%s@%s", in.resource.Resource, in.name, rv)
	}
	return b.String(), true
}

// sourceInputs are the objects a render of src reads: its ConfigMap, or
// the Secrets of its credentials, certificates and verification keys;
// false for a source that sets no kind.
func sourceInputs(src convoyv1alpha1.ReleaseSource) ([]input, bool) {
	var inputs []input
	secretRefs := func(refs ...*convoyv1alpha1.LocalObjectReference) {
		for _, r := range refs {
			if r != nil {
				inputs = append(inputs, input{resource: secretsResource, name: r.Name})
			}
		}
	}
	switch {
	case src.ConfigMap != nil:
		inputs = append(inputs, input{resource: configMapsResource, name: src.ConfigMap.Name})
	case src.OCIRepository != nil:
		secretRefs(src.OCIRepository.SecretRef, src.OCIRepository.CertSecretRef)
		if v := src.OCIRepository.Verify; v != nil {
			// A key removed from the Secret (a trust root changed) renders
			// again, verified again.
			secretRefs(v.SecretRef, v.TrustedRootSecretRef)
		}
	case src.HelmRepository != nil:
		secretRefs(src.HelmRepository.SecretRef, src.HelmRepository.CertSecretRef)
		if v := src.HelmRepository.Verify; v != nil {
			// A key removed from the Secret renders again, verified again.
			secretRefs(&v.SecretRef)
		}
	case src.Git != nil:
		secretRefs(src.Git.SecretRef, src.Git.CertSecretRef)
		if v := src.Git.Verify; v != nil {
			// A key removed from the Secret renders again, verified again.
			secretRefs(&v.SecretRef)
		}
	default:
		return nil, false
	}
	return inputs, true
}

func (c *RenderCache) get(key string) (*render.Render, bool) {
	cached, ok := c.entries.Get(key)
	if !ok {
		agecache.CountLookup(agecache.CacheRender, false)
		return nil, false
	}
	raw, err := inflate(cached.data, cached.jsonSize)
	if err != nil {
		agecache.CountLookup(agecache.CacheRender, false)
		return nil, false
	}
	var objects []map[string]any
	// utiljson keeps integers int64, as the decoders of unstructured do.
	if err := utiljson.Unmarshal(raw, &objects); err != nil {
		agecache.CountLookup(agecache.CacheRender, false)
		return nil, false
	}
	agecache.CountLookup(agecache.CacheRender, true)
	r := &render.Render{Ref: cached.ref, Size: cached.renderSize, Resolved: cached.resolved, ValuesResolved: cached.valuesResolved, Objects: make([]*unstructured.Unstructured, len(objects))}
	for i, obj := range objects {
		r.Objects[i] = &unstructured.Unstructured{Object: obj}
	}
	return r, true
}

func (c *RenderCache) put(key string, r *render.Render) {
	objects := make([]map[string]any, len(r.Objects))
	for i, o := range r.Objects {
		objects[i] = o.Object
	}
	raw, err := json.Marshal(objects)
	if err != nil {
		return
	}
	data, err := deflate(raw)
	if err != nil {
		return
	}
	c.entries.Put(key, cachedRender{ref: r.Ref, renderSize: r.Size, jsonSize: len(raw), data: data, resolved: r.Resolved, valuesResolved: r.ValuesResolved})
}

// deflaters and inflaters are DEFLATE writers and readers to reuse: a
// writer holds about a megabyte of state, a reader a 32 KiB window.
var deflaters, inflaters sync.Pool

// deflate returns raw compressed.
func deflate(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, ok := deflaters.Get().(*flate.Writer)
	if ok {
		w.Reset(&buf)
	} else {
		var err error
		if w, err = flate.NewWriter(&buf, flate.BestSpeed); err != nil {
			return nil, err
		}
	}
	defer deflaters.Put(w)
	if _, err := w.Write(raw); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(buf.Bytes()), nil // no spare capacity kept
}

// inflate returns the size bytes that data deflates.
func inflate(data []byte, size int) ([]byte, error) {
	src := bytes.NewReader(data)
	r, ok := inflaters.Get().(io.ReadCloser)
	if ok {
		if err := r.(flate.Resetter).Reset(src, nil); err != nil {
			return nil, err
		}
	} else {
		r = flate.NewReader(src)
	}
	defer inflaters.Put(r)
	out := make([]byte, size)
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Len returns how many renders the cache holds.
func (c *RenderCache) Len() int { return c.entries.Len() }

// renderSpecHash hashes the fields of spec that a fresh render may read:
// every field but syncPolicy (when to check and sync) and healthAssessment
// (which rules judge the objects). A field added to the spec later is in the
// hash unless it is left out here.
func renderSpecHash(spec *convoyv1alpha1.ReleaseSpec) (string, error) {
	rendered := *spec
	rendered.SyncPolicy = convoyv1alpha1.SyncPolicy{}
	rendered.HealthAssessment = nil
	data, err := json.Marshal(&rendered)
	if err != nil {
		return "", fmt.Errorf("hashing the spec: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12]), nil
}
