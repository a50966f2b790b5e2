// Package contest finds the fields that self-heal cannot win: a field the
// same manager takes back after each self-heal, Options.Heals times within
// Options.Window, is contested, and the Release's self-heal requests back off
// while every drifted field is. The drift loop asks one thing per pass
// (Tracker.Decide), of a memory that is the leader's, seeded from and
// written to status.selfHeal; every check reads the fields from there
// (Mark). Users' view: docs/users/drift.md, "Contested fields"; the
// code's: docs/contributors/internals.md, "Contested fields".
package contest

import (
	"cmp"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/describe"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// Defaults of Options.
const (
	DefaultHeals      = 3
	DefaultWindow     = 10 * time.Minute
	DefaultMaxBackoff = time.Hour
	// maxFields bounds the fields remembered per Release; the one seen
	// longest ago goes first.
	maxFields = 256
	// maxSeededHeals bounds the take-backs a field is seeded with from a
	// status (its heals).
	maxSeededHeals = 64
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
// concurrent use. It keeps an entry for each Release it saw until Forget,
// so that it seeds a Release from its status once: a status read later
// (from an informer that has not seen the last write yet) is not the truth.
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
	// seeded: read from a status, applied is not known yet; the first
	// pass that sees the field learns it without counting a take-back.
	seeded bool
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

// Pass is a drift pass of a Release, as Decide reads it.
type Pass struct {
	// Release is the Release checked: its UID, and its status.selfHeal,
	// which seeds the memory of a Release the Tracker has none of (after a
	// failover or a restart; see seed).
	Release *convoyv1alpha1.Release
	// Verdict and Objects are what the check found: an Undetermined
	// verdict says nothing of the fields, InSync that none drifted.
	Verdict subresourcesv1alpha1.DiffResult
	Objects []subresourcesv1alpha1.ObjectDiff
	// Heal is set when the pass would request a self-heal (drift in
	// automatic mode); Interval is spec.syncPolicy.interval, where the
	// backoff of those requests starts.
	Heal     bool
	Interval time.Duration
}

// Decision is what a drift pass does about its Release's contested fields.
type Decision struct {
	// Observed is set when the pass said something of the fields (its
	// verdict was not Undetermined): only then are NewlyContested and
	// Total new.
	Observed bool
	// NewlyContested are the fields that became contested in this pass: a
	// Warning Event each.
	NewlyContested []Field
	// Contested are all the Release's contested fields: the InSync message
	// of a pass that found drift names them.
	Contested []Field
	// Total is the number of contested fields of all Releases (the gauge),
	// when Observed.
	Total int
	// Request is set when the pass requests its self-heal: Pass.Heal, and
	// self-heal does not back off (a drifted field is not contested, or
	// the backoff is over).
	Request bool
	// Status is status.selfHeal after the pass: nil when no field is
	// contested.
	Status *convoyv1alpha1.SelfHealStatus
}

// Decide records a drift pass of a Release and decides what it does about
// its contested fields: it seeds the Release's memory from its status the
// first time, records the drifted fields (not on an Undetermined verdict),
// tells whether the pass requests its self-heal, and what status.selfHeal
// holds after it.
func (t *Tracker) Decide(p Pass) Decision {
	uid := p.Release.UID
	now := t.opts.Clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seed(uid, p.Release.Status.SelfHeal, now)
	var d Decision
	if p.Verdict != subresourcesv1alpha1.DiffUndetermined {
		var drifted []subresourcesv1alpha1.ObjectDiff
		if p.Verdict == subresourcesv1alpha1.DiffDrifted {
			drifted = p.Objects
		}
		d.Observed, d.NewlyContested, d.Total = true, t.observe(uid, drifted, now), t.count()
	}
	d.Contested = t.contested(uid)
	d.Request = p.Heal && t.shouldRequest(uid, p.Interval, p.Objects, now)
	d.Status = t.status(uid)
	return d
}

// observe records the objects of a drift pass of the Release uid (the
// Changes, owners and AppliedAt of each) and returns the fields that
// became contested in it. t.mu is held.
func (t *Tracker) observe(uid types.UID, objects []subresourcesv1alpha1.ObjectDiff, now time.Time) []Field {
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
		object := o.Key()
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
			switch {
			case h == nil || h.manager != owner.Manager || h.subresource != owner.Subresource:
				t.makeRoom(r)
				h = &history{manager: owner.Manager, subresource: owner.Subresource, applied: applied}
				r.fields[key] = h
			case h.seeded:
				h.applied, h.seeded = applied, false
			case applied.After(h.applied):
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
		if !r.contested() {
			r.backoff, r.nextRequest = 0, time.Time{}
		}
	}
	return contested
}

// contested reports whether a field of r is contested.
func (r *release) contested() bool {
	for _, h := range r.fields {
		if !h.since.IsZero() {
			return true
		}
	}
	return false
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
func (f Field) Owner() string { return describe.Manager(f.Manager, f.Subresource) }

func (h *history) field(key fieldKey) Field {
	return Field{Object: key.object, ContestedField: subresourcesv1alpha1.ContestedField{
		Path: key.path, Manager: h.manager, Subresource: h.subresource, Heals: int32(len(h.takes)), Since: metav1.NewTime(h.since)}}
}

// contested returns the contested fields of the Release uid. t.mu is held.
func (t *Tracker) contested(uid types.UID) []Field {
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

// count is the number of contested fields of all Releases. t.mu is held.
func (t *Tracker) count() int {
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

// shouldRequest tells whether a drift pass of the Release uid that found
// drift requests a self-heal now: always without a contested field, or when
// a drifted field is not contested (uncontested drift heals at once);
// else once per backoff, which doubles from interval up to MaxBackoff.
// t.mu is held.
func (t *Tracker) shouldRequest(uid types.UID, interval time.Duration, objects []subresourcesv1alpha1.ObjectDiff, now time.Time) bool {
	r := t.releases[uid]
	if r == nil || !r.contested() {
		if r != nil {
			r.backoff, r.nextRequest = 0, time.Time{}
		}
		return true
	}
	for _, o := range objects {
		if o.Status == subresourcesv1alpha1.ObjectMissing {
			return true
		}
		object := o.Key()
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

// seed starts the memory of the Release uid from status, its
// status.selfHeal as the leader last wrote it, unless the Tracker already
// has a memory of it: after a failover or a restart, the contested fields
// stay contested (with their manager, since and heals, at most
// maxSeededHeals) and the self-heal requests keep their backoff. A seeded
// field is taken as drifted now: its contest ends a window after the first
// pass that does not find it drifted. A nil status seeds an empty memory.
// t.mu is held.
func (t *Tracker) seed(uid types.UID, status *convoyv1alpha1.SelfHealStatus, now time.Time) {
	if _, ok := t.releases[uid]; ok {
		return
	}
	r := &release{fields: map[fieldKey]*history{}}
	t.releases[uid] = r
	if status == nil {
		return
	}
	for _, f := range status.Contested[:min(len(status.Contested), convoyv1alpha1.MaxContestedFields)] {
		h := &history{manager: f.Manager, subresource: f.Subresource, lastDrift: now, since: f.Since.Time, seeded: true}
		if h.since.IsZero() {
			h.since = now
		}
		for range min(int(f.Heals), maxSeededHeals) {
			h.takes = append(h.takes, now)
		}
		r.fields[fieldKey{object: f.Object(), path: f.Path}] = h
	}
	if !r.contested() {
		return // a backoff without a contest is none
	}
	if status.Backoff != nil && status.Backoff.Duration > 0 {
		r.backoff = min(status.Backoff.Duration, t.opts.MaxBackoff)
	}
	if status.NextRequestAt != nil {
		r.nextRequest = status.NextRequestAt.Time
	}
}

// status is what the Release uid's status.selfHeal holds: its contested
// fields, at most convoyv1alpha1.MaxContestedFields (the ones contested
// longest first, then by object and path), each string cut to the CRD's
// bounds and each time to the second (what the API server keeps), and the
// backoff of its self-heal requests; nil when no field is contested. The
// same memory gives the same status, so that a pass that changes nothing
// writes nothing. t.mu is held.
func (t *Tracker) status(uid types.UID) *convoyv1alpha1.SelfHealStatus {
	r := t.releases[uid]
	if r == nil {
		return nil
	}
	var fields []convoyv1alpha1.ContestedField
	for key, h := range r.fields {
		if !h.since.IsZero() {
			fields = append(fields, h.status(key))
		}
	}
	if len(fields) == 0 {
		return nil
	}
	slices.SortFunc(fields, func(a, b convoyv1alpha1.ContestedField) int {
		return cmp.Or(a.Since.Compare(b.Since.Time), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Path, b.Path))
	})
	s := &convoyv1alpha1.SelfHealStatus{Contested: fields[:min(len(fields), convoyv1alpha1.MaxContestedFields)]}
	if r.backoff > 0 {
		s.Backoff = &metav1.Duration{Duration: r.backoff}
	}
	if !r.nextRequest.IsZero() {
		at := metav1.NewTime(r.nextRequest).Rfc3339Copy()
		s.NextRequestAt = &at
	}
	return s
}

// status is the field as status.selfHeal lists it.
func (h *history) status(key fieldKey) convoyv1alpha1.ContestedField {
	// Names the API server bounds already, cut all the same: a value past
	// the CRD's bounds would fail the observer's whole status write.
	return convoyv1alpha1.ContestedField{
		Group:       truncate.String(key.object.Group, 253),
		Kind:        truncate.String(key.object.Kind, 253),
		Namespace:   truncate.String(key.object.Namespace, 63),
		Name:        truncate.String(key.object.Name, 253),
		Path:        truncate.String(key.path, convoyv1alpha1.MaxContestedPath),
		Manager:     truncate.String(h.manager, convoyv1alpha1.MaxFieldManager),
		Subresource: truncate.String(h.subresource, 253),
		Heals:       int32(len(h.takes)),
		Since:       metav1.NewTime(h.since).Rfc3339Copy(),
	}
}
