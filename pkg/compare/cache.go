package compare

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
)

// DefaultCacheMaxAge is how long a compare is reused at most: every object
// goes through a real dry run at least that often, so that a new admission
// policy, webhook or CRD default shows within it.
const DefaultCacheMaxAge = 10 * time.Minute

// maxCachedResults bounds the ResultCache: a fleet of 5,000 Releases of 20
// objects fits twice.
const maxCachedResults = 200_000

// ResultCache keeps the last compare of each object, keyed by everything
// its result depends on: the identity and the cluster it was compared as
// and on, the object, the hash of the desired object and the live object's
// resourceVersion. A compare whose key is unchanged, and younger than the
// maximum age, is reused without a dry run. It is safe for concurrent use.
type ResultCache struct {
	entries *agecache.Cache[resultKey, cachedResult]
}

// NewResultCache returns a ResultCache whose entries are reused for at most
// maxAge.
func NewResultCache(maxAge time.Duration, clk clock.PassiveClock) *ResultCache {
	return &ResultCache{entries: agecache.New[resultKey, cachedResult](maxCachedResults, maxAge, clk, nil)}
}

// resultKey names one object as one identity on one cluster: the SHA-256
// of who, the cluster, the object's group, version, kind, namespace and
// name. A hash rather than the strings, so that an entry pins none of the
// strings of the render it came from (a fleet keeps 100,000 entries).
type resultKey [sha256.Size]byte

// resultKeyOf returns the resultKey of an object.
func resultKeyOf(who, cluster string, gvk schema.GroupVersionKind, namespace, name string) resultKey {
	b := make([]byte, 0, 256)
	for _, s := range [...]string{who, cluster, gvk.Group, gvk.Version, gvk.Kind, namespace, name} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return sha256.Sum256(b)
}

// cachedResult is one compare and what it depended on. It keeps the
// outcome only (status and changes, nil for an object in sync); the names
// of the object are the caller's (withOutcome).
type cachedResult struct {
	desired [sha256.Size]byte
	rv      string
	status  subresourcesv1alpha1.ObjectStatus
	changes []subresourcesv1alpha1.FieldChange
	applied *metav1.Time
}

// withOutcome returns d with the status and changes of r (and who made
// them).
func (r cachedResult) withOutcome(d subresourcesv1alpha1.ObjectDiff) subresourcesv1alpha1.ObjectDiff {
	d.Status, d.Changes, d.ChangedBy, d.AppliedAt = r.status, r.changes, changedBy(r.changes), r.applied
	return d
}

// get returns the compare of key when the desired object and the live
// resourceVersion are those it was made with, and it is young enough.
func (c *ResultCache) get(key resultKey, desired [sha256.Size]byte, rv string) (cachedResult, bool) {
	r, ok := c.entries.Get(key)
	hit := ok && r.desired == desired && r.rv == rv
	agecache.CountLookup(agecache.CacheCompare, hit)
	if !hit {
		return cachedResult{}, false
	}
	return r, true
}

// prior returns the compare of key made with the desired object, young
// enough to be reused when the live object has its resourceVersion (which
// the caller still has to check): only then is a shared LIST worth asking.
// It counts neither a hit nor a miss.
func (c *ResultCache) prior(key resultKey, desired [sha256.Size]byte) (cachedResult, bool) {
	r, ok := c.entries.Get(key)
	if !ok || r.desired != desired {
		return cachedResult{}, false
	}
	return r, true
}

func (c *ResultCache) put(key resultKey, desired [sha256.Size]byte, rv string, diff subresourcesv1alpha1.ObjectDiff) {
	c.entries.Put(key, cachedResult{desired: desired, rv: strings.Clone(rv), status: diff.Status, changes: diff.Changes, applied: diff.AppliedAt})
}

func (c *ResultCache) forget(key resultKey) { c.entries.Remove(key) }

// Len returns how many compares the cache holds.
func (c *ResultCache) Len() int { return c.entries.Len() }

// hashOf is the SHA-256 of the JSON of obj (encoding/json sorts map keys,
// so equal objects hash alike).
func hashOf(obj *unstructured.Unstructured) ([sha256.Size]byte, error) {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(data), nil
}
