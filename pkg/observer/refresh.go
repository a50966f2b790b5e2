package observer

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// The drift loop's handling of a refresh request (POST releases/NAME/refresh,
// recorded by pkg/requests as the annotation
// convoy.kumodo.io/refresh-requested-at): a pass RefreshDelay after it that
// resolves the source again, whatever --source-resolve-max-age
// (drift.Options.ResolvedAfter), and records it handled in
// status.lastHandledRefreshAt (docs/contributors/internals.md, "Refresh").

// RefreshDelay is how long after a refresh request its pass runs: the
// requests that come meanwhile (a script that refreshes a fleet, a user
// who clicks twice) are handled by the same pass, with one read of the
// source.
const RefreshDelay = time.Second

// queueRefresh adds the pass of cur RefreshDelay after a new refresh
// request (see refreshRequested), so that the requests of that delay make
// one pass, and reports whether there was one. The pass follows no event
// of the cluster: it shares fresh LISTs.
func (l *DriftLoop) queueRefresh(old, cur *convoyv1alpha1.Release) bool {
	if !refreshRequested(old, cur) {
		return false
	}
	l.addAfter(cur, RefreshDelay)
	return true
}

// refreshRequested tells a new refresh request: the annotation
// convoy.kumodo.io/refresh-requested-at changed.
func refreshRequested(old, cur *convoyv1alpha1.Release) bool {
	v, ok := cur.Annotations[convoyv1alpha1.AnnotationRefreshRequestedAt]
	return ok && v != old.Annotations[convoyv1alpha1.AnnotationRefreshRequestedAt]
}

// refreshOf is the refresh request a pass of release handles now (false:
// none): pendingRefresh, after the one this replica handled last.
func (l *DriftLoop) refreshOf(release *convoyv1alpha1.Release) (refreshRequest, bool) {
	return pendingRefresh(release, l.status.SeenRefresh(release), time.Now())
}

// handled records in status that a pass whose check ran handled r: written
// as status.lastHandledRefreshAt, and kept by this replica as the value it
// handled.
func (r refreshRequest) handled(ctx context.Context, status *DriftStatus) {
	status.HandledRefresh, status.SeenRefresh = r.record, r.value
	refreshesHandled.Inc()
	klog.FromContext(ctx).V(2).Info("Handled a refresh request", "requestedAt", r.record)
}

// SeenRefresh is the value of the refresh annotation of release that a
// drift pass of this replica handled last ("" if none).
func (w *StatusWriter) SeenRefresh(release *convoyv1alpha1.Release) string {
	p := w.part(release)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seenRefresh
}

// refreshRequest is a refresh request a drift pass handles.
type refreshRequest struct {
	// value is the annotation's value, as anyone who may update the
	// Release wrote it: any length, any text.
	value string
	// at is the time the pass resolves the source after: the request's
	// time, or the moment the pass saw it.
	at time.Time
	// record is status.lastHandledRefreshAt once it is handled: the value
	// itself when it is a time of at most 64 bytes (the CRD's bound), so
	// that the requester of POST /refresh finds its own value; else at in
	// RFC 3339 with nanoseconds, UTC (at most 35 bytes).
	record string
}

// pendingRefresh is the refresh request of release its drift loop has not
// handled yet (false: none). seen is the annotation value this replica
// handled last for the Release ("" after a restart): a value that is not
// a time, or that is further ahead than convoyv1alpha1.RefreshSkew, is a
// request of now once, not at every pass. A request at or before
// status.lastHandledRefreshAt was handled already (requests recorded at
// once can land out of order); a status value that is not a time, or
// further ahead than RefreshSkew (an earlier version copied the
// annotation as it was), counts as none.
func pendingRefresh(release *convoyv1alpha1.Release, seen string, now time.Time) (refreshRequest, bool) {
	v := release.Annotations[convoyv1alpha1.AnnotationRefreshRequestedAt]
	if v == "" || v == seen {
		return refreshRequest{}, false
	}
	t, ok := refreshTime(v, now)
	if !ok {
		return refreshRequest{value: v, at: now, record: formatRefresh(now)}, true
	}
	if handled, ok := refreshTime(release.Status.LastHandledRefreshAt, now); ok && !t.After(handled) {
		return refreshRequest{}, false
	}
	record := v
	if len(record) > maxRefreshRecord {
		record = formatRefresh(t)
	}
	return refreshRequest{value: v, at: t, record: record}, true
}

// maxRefreshRecord is the longest status.lastHandledRefreshAt the CRD
// accepts.
const maxRefreshRecord = 64

// refreshTime parses v as an RFC 3339 time no further ahead of now than
// convoyv1alpha1.RefreshSkew.
func refreshTime(v string, now time.Time) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil || t.After(now.Add(convoyv1alpha1.RefreshSkew)) {
		return time.Time{}, false
	}
	return t, true
}

// formatRefresh is t as status.lastHandledRefreshAt holds a time that
// was not written as one: at most 35 bytes.
func formatRefresh(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}
