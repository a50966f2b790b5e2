package receiver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"

	"github.com/kumodo/convoy-apiserver/pkg/receiverindex"
	"github.com/kumodo/convoy-apiserver/pkg/webhook"
)

// Bounds of the work of one delivery.
const (
	// MaxRefreshesPerDelivery is the most Releases one delivery refreshes;
	// the others are logged.
	MaxRefreshesPerDelivery = 256
	// refreshTimeout bounds the list and the refreshes, within the
	// server's write timeout.
	refreshTimeout = 8 * time.Second
	// busyRetryAfter is the Retry-After of a 503.
	busyRetryAfter = time.Second
)

// result is what became of a delivery: its type label, its outcome and
// the Retry-After of its answer.
type result struct {
	typ        string
	outcome    outcome
	retryAfter time.Duration
}

// serve handles one delivery and answers it.
func (l *Listener) serve(w http.ResponseWriter, r *http.Request) {
	res := l.handleSafely(r)
	reply(w, res.typ, res.outcome, res.retryAfter)
}

// handleSafely is handle, a panic an error: no input takes the listener
// down.
func (l *Listener) handleSafely(r *http.Request) (res result) {
	res.typ = typeUnknown
	defer func() {
		if p := recover(); p != nil {
			klog.FromContext(r.Context()).Error(nil, "Panic while handling a webhook delivery", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			res.outcome, res.retryAfter = outcomeError, 0
		}
	}()
	l.handle(r, &res)
	return res
}

// handle takes a delivery through the steps of the package's doc, in
// order, and sets res.
func (l *Listener) handle(r *http.Request, res *result) {
	if r.Method != http.MethodPost {
		res.outcome = outcomeMethodNotAllowed
		return
	}
	entry, ok := l.cfg.Index.Lookup(r.URL.Path)
	if !ok {
		res.outcome = outcomeUnknownPath
		return
	}
	res.typ = typeLabel(entry.Type)
	// The path is a capability: it is never logged, the Receiver is.
	logger := klog.FromContext(r.Context()).WithValues("receiver", klog.KRef(entry.Namespace, entry.Name), "type", entry.Type)
	if ok, wait := l.limits.allow(entry.UID); !ok {
		logger.V(2).Info("Webhook delivery refused: rate limited", "retryAfter", wait)
		res.outcome, res.retryAfter = outcomeRateLimited, wait
		return
	}
	if !l.limits.acquire() {
		logger.V(2).Info("Webhook delivery refused: too many in flight", "maxInFlight", l.cfg.MaxInFlight)
		res.outcome, res.retryAfter = outcomeBusy, busyRetryAfter
		return
	}
	defer l.limits.release()
	body, err := readBody(r, l.cfg.MaxBodyBytes)
	switch {
	case errors.Is(err, errTooLarge):
		logger.V(1).Info("Webhook delivery refused: body too large", "contentLength", r.ContentLength, "maxBodyBytes", l.cfg.MaxBodyBytes)
		res.outcome = outcomeTooLarge
		return
	case err != nil:
		logger.V(1).Info("Webhook delivery refused: the body could not be read", "err", err)
		res.outcome = outcomeMalformed
		return
	}
	if err := webhook.Verify(entry.Type, r.Header, body, entry.Token); err != nil {
		logger.V(1).Info("Webhook delivery refused: signature", "err", err)
		res.outcome = outcomeUnauthorized
		return
	}
	d, err := webhook.Parse(entry.Type, r.Header, body)
	if err != nil {
		logger.V(1).Info("Webhook delivery refused: malformed body", "reason", kindOf(err))
		res.outcome = outcomeMalformed
		return
	}
	res.outcome = l.deliver(r.Context(), logger.WithValues("event", d.Event, "delivery", d.ID), entry, d)
}

// deliver handles a verified delivery d of entry: ping, events, replay,
// then the refreshes.
func (l *Listener) deliver(ctx context.Context, logger klog.Logger, entry receiverindex.Entry, d webhook.Delivery) outcome {
	if d.Ping {
		logger.V(2).Info("Webhook ping")
		return outcomePing
	}
	if len(entry.Events) > 0 && !slices.Contains(entry.Events, d.Event) {
		logger.V(2).Info("Webhook delivery ignored: event not in spec.events")
		return outcomeIgnored
	}
	key := dedupKey{uid: entry.UID, id: d.ID}
	if d.ID != "" && l.dedup.seen(key, l.cfg.Clock.Now()) {
		logger.V(2).Info("Webhook delivery ignored: a replay of a delivery id seen")
		return outcomeDuplicate
	}
	if !d.Refresh() {
		logger.V(2).Info("Webhook delivery ignored: nothing to refresh")
		return outcomeIgnored
	}
	if err := l.refresh(ctx, logger, entry, d); err != nil {
		logger.Error(err, "Webhook delivery failed")
		if d.ID != "" {
			// Its redelivery (GitHub's keeps the id) is handled again.
			l.dedup.forget(key)
		}
		return outcomeError
	}
	return outcomeAccepted
}

// refresh lists the Releases entry selects, once, and refreshes those
// whose source d names, at most MaxRefreshesPerDelivery.
func (l *Listener) refresh(ctx context.Context, logger klog.Logger, entry receiverindex.Entry, d webhook.Delivery) error {
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	selector := entry.Releases
	if selector == nil {
		selector = labels.Nothing()
	}
	// The lister returns the Releases of the namespace that selector
	// selects: only the sources are checked here.
	releases, err := l.cfg.Releases.List(ctx, entry.Namespace, selector)
	switch {
	case errors.Is(err, ErrTruncated):
		logger.Info("Webhook delivery: more Releases are selected than are listed; the first are refreshed", "listed", len(releases))
	case err != nil:
		return err
	}
	requester := requesterOf(entry, d)
	var errs []error
	matched, refreshed := 0, 0
	for i := range releases {
		rel := &releases[i]
		if !concerns(d, rel) {
			continue
		}
		if matched++; matched > MaxRefreshesPerDelivery {
			continue
		}
		if _, err := l.cfg.Refresher.Refresh(ctx, entry.Namespace, rel.Name, requester); err != nil {
			errs = append(errs, fmt.Errorf("refreshing Release %s: %w", rel.Name, err))
			continue
		}
		refreshed++
		refreshes.WithLabelValues(typeLabel(entry.Type)).Inc()
	}
	if matched > MaxRefreshesPerDelivery {
		logger.Info("Webhook delivery names more Releases than one delivery refreshes", "matched", matched, "max", MaxRefreshesPerDelivery)
	}
	logger.V(1).Info("Webhook delivery handled", "listed", len(releases), "refreshed", refreshed)
	return utilerrors.NewAggregate(errs)
}

// requesterOf is who the refreshes' Events name: the Receiver, its type
// and the delivery's id.
func requesterOf(entry receiverindex.Entry, d webhook.Delivery) string {
	if d.ID == "" {
		return fmt.Sprintf("receiver %s/%s (%s delivery)", entry.Namespace, entry.Name, entry.Type)
	}
	return fmt.Sprintf("receiver %s/%s (%s delivery %s)", entry.Namespace, entry.Name, entry.Type, d.ID)
}

// kindOf is the kind of a webhook error, for the log: not its text, which
// may quote the body.
func kindOf(err error) string {
	var werr *webhook.Error
	if errors.As(err, &werr) {
		return werr.Kind.String()
	}
	return "unknown"
}
