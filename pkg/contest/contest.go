// Package contest finds the fields that self-heal cannot win: a field that
// the same manager (name and subresource) takes back after each self-heal,
// Options.Heals times within Options.Window, is contested. While a Release
// has a contested field, its self-heal requests back off (doubling from its
// interval, up to Options.MaxBackoff) instead of one per drift pass; drift
// that is not contested still heals at once. A contest ends when the field
// stays healed for a window.
//
// A self-heal is seen in the object itself: the time of convoy's
// managedFields entry (ObjectDiff.AppliedAt) moves at each effective apply.
// The memory is per Release, bounded, in the process that runs the drift
// loop, and dropped with the Release: a failover forgets it.
package contest

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// Defaults of Options.
const (
	DefaultHeals      = 3
	DefaultWindow     = 10 * time.Minute
	DefaultMaxBackoff = time.Hour
	// maxFields bounds the fields remembered per Release; the one seen
	// longest ago goes first.
	maxFields = 256
)

// Options of a Tracker.
type Options struct {
	// Heals is how many take-backs after a self-heal make a field
	// contested (--contest-heals).
	Heals int
	// Window is the time within which they count, and how long a field
	// must stay healed for its contest to end (--contest-window).
	Window time.Duration
	// MaxBackoff caps the time between two self-heal requests of a Release
	// with a contested field (--contest-max-backoff).
	MaxBackoff time.Duration
	Clock      clock.PassiveClock
}

// Tracker remembers, per Release, object and path, who drifted a field
// and how often it took it back after a self-heal. It is safe for
// concurrent use.
type Tracker struct {
	opts     Options
	mu       sync.Mutex
	releases map[types.UID]*release
}

type release struct {
	fields map[fieldKey]*history
	// nextRequest and backoff pace the self-heal requests while a field
	// is contested.
	nextRequest time.Time
	backoff     time.Duration
}

type fieldKey struct {
	object convoyv1alpha1.ObjectKey
	path   string
}

type history struct {
	manager, subresource string
	// applied is convoy's apply time the field was last seen drifted with.
	applied time.Time
	// takes are when it was found taken back after a heal, within the
	// window.
	takes     []time.Time
	lastDrift time.Time
	since     time.Time // when contested; zero when not
}

// New returns a Tracker.
func New(opts Options) *Tracker {
	if opts.Heals <= 0 {
		opts.Heals = DefaultHeals
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Tracker{opts: opts, releases: map[types.UID]*release{}}
}

// Observe records the objects of a drift pass of the Release uid (the
// Changes, owners and AppliedAt of each) and returns the fields that
// became contested in it.
func (t *Tracker) Observe(uid types.UID, objects []subresourcesv1alpha1.ObjectDiff) []Field {
	now := t.opts.Clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.releases[uid]
	var contested []Field
	seen := map[fieldKey]bool{}
	for _, o := range objects {
		if o.Status != subresourcesv1alpha1.ObjectModified {
			continue
		}
		var applied time.Time
		if o.AppliedAt != nil {
			applied = o.AppliedAt.Time
		}
		object := convoyv1alpha1.ObjectKey{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
		for _, c := range o.Changes {
			if len(c.Owners) == 0 {
				continue
			}
			owner := c.Owners[0]
			key := fieldKey{object: object, path: c.Path}
			seen[key] = true
			if r == nil {
				r = &release{fields: map[fieldKey]*history{}}
				t.releases[uid] = r
			}
			h := r.fields[key]
			if h == nil || h.manager != owner.Manager || h.subresource != owner.Subresource {
				t.makeRoom(r)
				h = &history{manager: owner.Manager, subresource: owner.Subresource, applied: applied}
				r.fields[key] = h
			} else if applied.After(h.applied) {
				// convoy applied the object since the field was last seen
				// drifted by this manager, which took it back.
				h.applied = applied
				h.takes = append(h.takes, now)
			}
			h.lastDrift = now
			h.takes = within(h.takes, now.Add(-t.opts.Window))
			if h.since.IsZero() && len(h.takes) >= t.opts.Heals {
				h.since = now
				contested = append(contested, h.field(key))
			}
		}
	}
	if r != nil {
		for key, h := range r.fields {
			if !seen[key] && now.Sub(h.lastDrift) >= t.opts.Window {
				delete(r.fields, key) // healed for a window: the contest ends
			}
		}
		if len(r.fields) == 0 {
			delete(t.releases, uid)
		}
	}
	return contested
}

// makeRoom drops the field seen longest ago when r is full.
func (t *Tracker) makeRoom(r *release) {
	if len(r.fields) < maxFields {
		return
	}
	var oldest fieldKey
	var at time.Time
	for k, h := range r.fields {
		if at.IsZero() || h.lastDrift.Before(at) {
			oldest, at = k, h.lastDrift
		}
	}
	delete(r.fields, oldest)
}

func within(times []time.Time, from time.Time) []time.Time {
	i := 0
	for i < len(times) && times[i].Before(from) {
		i++
	}
	return times[i:]
}

// Field is a contested field of an object.
type Field struct {
	Object convoyv1alpha1.ObjectKey
	subresourcesv1alpha1.ContestedField
}

// Owner names the manager: "manager", or "manager (subresource)".
func (f Field) Owner() string {
	if f.Subresource != "" {
		return f.Manager + " (" + f.Subresource + ")"
	}
	return f.Manager
}

func (h *history) field(key fieldKey) Field {
	return Field{Object: key.object, ContestedField: subresourcesv1alpha1.ContestedField{
		Path: key.path, Manager: h.manager, Subresource: h.subresource, Heals: int32(len(h.takes)), Since: metav1.NewTime(h.since)}}
}

// Contested returns the contested fields of the Release uid.
func (t *Tracker) Contested(uid types.UID) []Field {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Field
	if r := t.releases[uid]; r != nil {
		for key, h := range r.fields {
			if !h.since.IsZero() {
				out = append(out, h.field(key))
			}
		}
	}
	return out
}

// Count is the number of contested fields of all Releases.
func (t *Tracker) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, r := range t.releases {
		for _, h := range r.fields {
			if !h.since.IsZero() {
				n++
			}
		}
	}
	return n
}

// ShouldRequest tells whether a drift pass of the Release uid that found
// drift requests a self-heal now: always without a contested field, or when
// a drifted field is not contested (uncontested drift heals at once);
// else once per backoff, which doubles from interval up to MaxBackoff.
func (t *Tracker) ShouldRequest(uid types.UID, interval time.Duration, objects []subresourcesv1alpha1.ObjectDiff) bool {
	now := t.opts.Clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.releases[uid]
	contested := false
	if r != nil {
		for _, h := range r.fields {
			contested = contested || !h.since.IsZero()
		}
	}
	if !contested {
		if r != nil {
			r.backoff, r.nextRequest = 0, time.Time{}
		}
		return true
	}
	for _, o := range objects {
		if o.Status == subresourcesv1alpha1.ObjectMissing {
			return true
		}
		object := convoyv1alpha1.ObjectKey{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
		for _, c := range o.Changes {
			if h := r.fields[fieldKey{object: object, path: c.Path}]; h == nil || h.since.IsZero() {
				return true
			}
		}
	}
	if now.Before(r.nextRequest) {
		return false
	}
	if r.backoff == 0 {
		r.backoff = interval
	}
	r.backoff = min(2*r.backoff, t.opts.MaxBackoff)
	r.nextRequest = now.Add(r.backoff)
	return true
}

// Forget drops what is remembered of the Release uid.
func (t *Tracker) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.releases, uid)
}
