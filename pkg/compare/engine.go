// Package compare is the compare engine of the observer: it compares the
// objects of a desired render with the live objects of a target cluster,
// the same way for the drift loop (the InSync condition) and for GET
// releases/NAME/diff, so that both always agree.
//
// For each desired object the engine reads the live object (absent:
// Missing), sends the desired object as a server-side apply dry run, clears
// the fields the API server sets on its own on both, redacts Secret values,
// and lists the field changes (none: InSync; some: Modified). The first
// error, by render order, makes the whole result Undetermined.
package compare

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/redact"
)

// DefaultWorkers is the number of objects compared at a time when NewEngine
// is given no positive number.
const DefaultWorkers = 16

// messagePaths is the number of changed paths a Drifted message names.
const messagePaths = 3

// Engine compares desired objects with live ones. It is safe for concurrent
// use.
type Engine struct {
	redactor *redact.Redactor
	workers  int
	// cache, when set, reuses the compare of unchanged objects.
	cache *ResultCache
}

// NewEngine returns an Engine that redacts with redactor (a nil redactor
// gets a new one with a random key: Secret values never go unredacted) and
// compares at most workers objects at a time (DefaultWorkers when workers
// is not positive).
func NewEngine(redactor *redact.Redactor, workers int) *Engine {
	if redactor == nil {
		redactor = redact.New()
	}
	if workers <= 0 {
		workers = DefaultWorkers
	}
	return &Engine{redactor: redactor, workers: workers}
}

// WithCache returns a copy of e that reuses, from cache, the compare of an
// object whose desired state, live resourceVersion, identity and cluster
// did not change (no dry run), and learns the live resourceVersion from the
// Cluster's shared LIST where it can tell (no read either).
func (e *Engine) WithCache(cache *ResultCache) *Engine {
	c := *e
	c.cache = cache
	return &c
}

// Result is the outcome of a compare.
type Result struct {
	// Verdict is InSync, Drifted or Undetermined (the result of /diff).
	Verdict subresourcesv1alpha1.DiffResult `json:"result"`
	// Reason is InSync, Drifted, or the reason of the first error.
	Reason string `json:"reason"`
	// Message is "all N objects are in sync"; or names the first drifted
	// object in render order and its first changed paths; or names the
	// object that failed and the error.
	Message string `json:"message"`
	// Objects are in render order. They are empty on Undetermined.
	Objects []subresourcesv1alpha1.ObjectDiff `json:"objects,omitempty"`
}

// Undetermined builds a Result for an error found before the compare
// (RenderFailed, ClusterNotFound, ...).
func Undetermined(reason, message string) *Result {
	return &Result{Verdict: subresourcesv1alpha1.DiffUndetermined, Reason: reason, Message: message}
}

// Compare compares each desired object with the live one on c.
//
// The cache (WithCache) and the Cluster's shared LIST (ResourceVersion)
// first tell which objects did not change since their last compare; the
// Cluster is then given the others to read ahead (ReadAhead), which it may
// do with a LIST per resource. At most e.workers objects are compared at a
// time, each with at most one Get and one DryRunApply (a Missing object: one
// Get; a Get may be answered from the read-ahead). The first error in
// render order ends the compare: the objects after it are no longer
// started and those in flight are canceled, while those before it run to
// their end, so that the result does not depend on which request failed
// first in time. The desired objects are not modified.
func (e *Engine) Compare(ctx context.Context, c Cluster, desired []*unstructured.Unstructured) *Result {
	for i, obj := range desired {
		if obj == nil || obj.GetKind() == "" || obj.GetAPIVersion() == "" || obj.GetName() == "" {
			return Undetermined(ReasonInvalidObject, fmt.Sprintf("object %d of the render has no apiVersion, kind or name", i))
		}
	}

	who := c.Who()
	if who == "" {
		who = "the client"
	}
	plans := e.plan(ctx, c, who, desired)
	var read []*unstructured.Unstructured
	for i, p := range plans {
		if !p.reused {
			read = append(read, desired[i])
		}
	}
	c.ReadAhead(ctx, read)
	n := len(desired)
	diffs := make([]subresourcesv1alpha1.ObjectDiff, n)
	failures := make([]*failure.Error, n)

	var (
		mu          sync.Mutex
		firstFailed = n // the lowest index that failed
		cancels     = make([]context.CancelFunc, n)
	)
	// fail records that object i failed and cancels the objects after it.
	fail := func(i int, f *failure.Error) {
		mu.Lock()
		defer mu.Unlock()
		failures[i] = f
		if i >= firstFailed {
			return
		}
		for j := i + 1; j < firstFailed && j < n; j++ {
			if cancels[j] != nil {
				cancels[j]()
			}
		}
		firstFailed = i
	}

	sem := make(chan struct{}, e.workers)
	var wg sync.WaitGroup
dispatch:
	for i, obj := range desired {
		if err := ctx.Err(); err != nil {
			fail(i, e.failed(obj, who, stepGet, err))
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			fail(i, e.failed(obj, who, stepGet, ctx.Err()))
			break dispatch
		}
		mu.Lock()
		if i > firstFailed {
			mu.Unlock()
			<-sem
			break dispatch
		}
		octx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		mu.Unlock()

		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer cancel()
			// A panic here would end the process: no caller can
			// recover it in another goroutine.
			defer func() {
				if r := recover(); r != nil {
					fail(i, &failure.Error{Reason: failure.ReasonInternalError, Message: fmt.Sprintf("%s: %s", convoyv1alpha1.ObjectKeyOf(obj).Describe(), failure.Panicked(ctx, r))})
				}
			}()
			d, f := e.compareOne(octx, c, who, obj, plans[i])
			if f != nil {
				fail(i, f)
				return
			}
			diffs[i] = d
		}()
	}
	wg.Wait()

	if firstFailed < n {
		f := failures[firstFailed]
		return Undetermined(f.Reason, f.Message)
	}
	return summarize(desired, diffs)
}

// objectPlan is what the cache says of one desired object before the
// compare: its key and hash, the compare to reuse if any, and whether a
// shared LIST already told that the live object did not change since
// (reused: no read, no dry run).
type objectPlan struct {
	cached   bool // the cache applies to the object
	key      resultKey
	hash     [sha256.Size]byte
	hasPrior bool
	prior    cachedResult
	reused   bool
}

// plan looks every desired object up in the cache, and those with a compare
// to reuse up in the Cluster's shared LIST (ResourceVersion): an object the
// LIST saw with the resourceVersion of that compare is reused, with no read
// and no dry run. An object the LIST did not see is read: it may be newer than the
// LIST. The LIST is asked only about objects with a compare to reuse (not in
// a first pass, nor after the desired object changed), so that the
// Snapshots count only the lookups a LIST can save.
func (e *Engine) plan(ctx context.Context, c Cluster, who string, desired []*unstructured.Unstructured) []objectPlan {
	plans := make([]objectPlan, len(desired))
	if e.cache == nil {
		return plans
	}
	cluster := c.ClusterName()
	for i, obj := range desired {
		hash, err := hashOf(obj)
		if err != nil {
			continue
		}
		p := &plans[i]
		gvk := obj.GroupVersionKind()
		p.cached, p.hash = true, hash
		p.key = resultKeyOf(who, cluster, gvk, obj.GetNamespace(), obj.GetName())
		p.prior, p.hasPrior = e.cache.prior(p.key, hash)
		if p.hasPrior {
			if rv, exists, known := c.ResourceVersion(ctx, gvk, obj.GetNamespace(), obj.GetName()); known && exists && rv == p.prior.rv {
				agecache.CountLookup(agecache.CacheCompare, true)
				p.reused = true
			}
		}
	}
	return plans
}

// compareOne compares one object.
func (e *Engine) compareOne(ctx context.Context, c Cluster, who string, obj *unstructured.Unstructured, p objectPlan) (subresourcesv1alpha1.ObjectDiff, *failure.Error) {
	gvk := obj.GroupVersionKind()
	d := subresourcesv1alpha1.ObjectDiff{
		Group:     gvk.Group,
		Version:   gvk.Version,
		Kind:      gvk.Kind,
		Namespace: obj.GetNamespace(),
		Name:      obj.GetName(),
	}
	if p.reused {
		return p.prior.withOutcome(d), nil
	}
	cached, key, hash := p.cached, p.key, p.hash
	live, err := c.Get(ctx, gvk, obj.GetNamespace(), obj.GetName())
	if err != nil {
		if apierrors.IsNotFound(err) && !isResourceNotServed(err) {
			if cached {
				e.cache.forget(key)
			}
			d.Status = subresourcesv1alpha1.ObjectMissing
			return d, nil
		}
		return d, e.failed(obj, who, stepGet, err)
	}
	if live == nil {
		return d, e.failed(obj, who, stepGet, errors.New("the client returned no object"))
	}
	if cached {
		if r, ok := e.cache.get(key, hash, live.GetResourceVersion()); ok {
			return r.withOutcome(d), nil
		}
	}
	dryRun, err := c.DryRunApply(ctx, obj)
	if err != nil {
		return d, e.failed(obj, who, stepDryRun, err)
	}
	if dryRun == nil {
		return d, e.failed(obj, who, stepDryRun, errors.New("the client returned no object"))
	}
	changes := diffChanges(
		e.redactor.Object(normalize(dryRun)).Object,
		e.redactor.Object(normalize(live)).Object,
	)
	if len(changes) > 0 {
		// Who changed each field: from the object already read.
		owners := ownersOf(live.Object, live.GetManagedFields())
		for i := range changes {
			owners.attribute(&changes[i])
		}
		d.AppliedAt = appliedAt(live.GetManagedFields())
	}
	d.Changes = fieldChanges(changes)
	d.ChangedBy = changedBy(d.Changes)
	if len(d.Changes) == 0 {
		d.Status = subresourcesv1alpha1.ObjectInSync
	} else {
		d.Status = subresourcesv1alpha1.ObjectModified
	}
	if cached {
		e.cache.put(key, hash, live.GetResourceVersion(), d)
	}
	return d, nil
}

// failed classifies err and writes the message that names the object and,
// for a refusal, who was refused.
func (e *Engine) failed(obj *unstructured.Unstructured, who string, s step, err error) *failure.Error {
	reason, what := classifyObjectFailure(s, who, err)
	msg := fmt.Sprintf("%s: %s: %v", convoyv1alpha1.ObjectKeyOf(obj).Describe(), what, err)
	return &failure.Error{Reason: reason, Message: scrubSecretValues(obj, msg), Err: err}
}

// summarize builds the Result of a compare without error.
func summarize(desired []*unstructured.Unstructured, diffs []subresourcesv1alpha1.ObjectDiff) *Result {
	for i := range diffs {
		d := &diffs[i]
		if d.Status == subresourcesv1alpha1.ObjectInSync {
			continue
		}
		msg := convoyv1alpha1.ObjectKeyOf(desired[i]).Describe() + " is " + string(d.Status)
		if len(d.Changes) > 0 {
			paths := make([]string, 0, messagePaths)
			for _, c := range d.Changes[:min(len(d.Changes), messagePaths)] {
				paths = append(paths, c.Path)
			}
			msg += ": " + strings.Join(paths, ", ")
			if more := len(d.Changes) - messagePaths; more > 0 {
				msg += fmt.Sprintf(" and %d more", more)
			}
			msg += "; " + changedByMessage(d.Changes)
		}
		return &Result{
			Verdict: subresourcesv1alpha1.DiffDrifted,
			Reason:  ReasonDrifted,
			Message: msg,
			Objects: diffs,
		}
	}
	var msg string
	switch len(diffs) {
	case 0:
		msg = "the render has no objects"
	case 1:
		msg = "1 object is in sync"
	default:
		msg = fmt.Sprintf("all %d objects are in sync", len(diffs))
	}
	return &Result{
		Verdict: subresourcesv1alpha1.DiffInSync,
		Reason:  ReasonInSync,
		Message: msg,
		Objects: diffs,
	}
}

// minScrubbed is the length from which a Secret value is scrubbed from an
// error message: shorter strings occur in ordinary text.
const minScrubbed = 4

// scrubSecretValues removes the values of a Secret from an error message of
// the API server (an admission webhook may quote the object it denies).
func scrubSecretValues(obj *unstructured.Unstructured, msg string) string {
	if !redact.IsSecret(obj) {
		return msg
	}
	var values []string
	if data, ok := obj.Object["data"].(map[string]any); ok {
		for _, v := range data {
			s, _ := v.(string)
			values = append(values, s)
			if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
				values = append(values, string(raw))
			}
		}
	}
	if data, ok := obj.Object["stringData"].(map[string]any); ok {
		for _, v := range data {
			s, _ := v.(string)
			values = append(values, s)
		}
	}
	// Longer values first, so that a value that contains another one goes
	// as a whole.
	slices.SortFunc(values, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, v := range values {
		if len(v) >= minScrubbed {
			msg = strings.ReplaceAll(msg, v, "[redacted]")
		}
	}
	return msg
}
