package receiver

import (
	"net/http"
	"strconv"
	"time"
)

// outcome is what became of a delivery: the outcome label of
// convoy_receiver_deliveries_total, and the answer.
type outcome string

// The outcomes of deliveries.
const (
	outcomeAccepted         outcome = "accepted"
	outcomePing             outcome = "ping"
	outcomeIgnored          outcome = "ignored"
	outcomeDuplicate        outcome = "duplicate"
	outcomeUnknownPath      outcome = "unknown_path"
	outcomeMethodNotAllowed outcome = "method_not_allowed"
	outcomeRateLimited      outcome = "rate_limited"
	outcomeBusy             outcome = "busy"
	outcomeTooLarge         outcome = "too_large"
	outcomeUnauthorized     outcome = "unauthorized"
	outcomeMalformed        outcome = "malformed"
	outcomeError            outcome = "error"
)

// outcomes lists every outcome, in a fixed order.
var outcomes = []outcome{
	outcomeAccepted, outcomePing, outcomeIgnored, outcomeDuplicate, outcomeUnknownPath, outcomeMethodNotAllowed,
	outcomeRateLimited, outcomeBusy, outcomeTooLarge, outcomeUnauthorized, outcomeMalformed, outcomeError,
}

// answer is the status and the fixed body of an outcome: never a name, an
// error or a count.
type answer struct {
	status int
	body   string
}

var answers = map[outcome]answer{
	outcomeAccepted:         {http.StatusAccepted, "accepted\n"},
	outcomePing:             {http.StatusOK, "ok\n"},
	outcomeIgnored:          {http.StatusAccepted, "accepted\n"},
	outcomeDuplicate:        {http.StatusOK, "duplicate\n"},
	outcomeUnknownPath:      {http.StatusNotFound, "not found\n"},
	outcomeMethodNotAllowed: {http.StatusMethodNotAllowed, "method not allowed\n"},
	outcomeRateLimited:      {http.StatusTooManyRequests, "too many requests\n"},
	outcomeBusy:             {http.StatusServiceUnavailable, "busy\n"},
	outcomeTooLarge:         {http.StatusRequestEntityTooLarge, "too large\n"},
	outcomeUnauthorized:     {http.StatusUnauthorized, "unauthorized\n"},
	outcomeMalformed:        {http.StatusBadRequest, "bad request\n"},
	outcomeError:            {http.StatusInternalServerError, "error\n"},
}

// reply writes the answer of o, with Retry-After when retryAfter is
// positive, and counts the delivery under typ.
func reply(w http.ResponseWriter, typ string, o outcome, retryAfter time.Duration) {
	a := answers[o]
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	switch o {
	case outcomeMethodNotAllowed:
		h.Set("Allow", http.MethodPost)
	case outcomeTooLarge:
		// The rest of the body is not read: the connection cannot be
		// reused.
		h.Set("Connection", "close")
	}
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((retryAfter+time.Second-1)/time.Second), 10))
	}
	w.WriteHeader(a.status)
	_, _ = w.Write([]byte(a.body))
	deliveries.WithLabelValues(typ, string(o)).Inc()
}
