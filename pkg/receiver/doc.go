// Package receiver is the listener of webhook deliveries (issue 62): an
// HTTPS server of its own (--receiver-bind-address) that takes the
// deliveries of forges and registries to the paths of Ready Receivers and
// refreshes the Releases of their namespace whose source they name.
//
// A delivery goes through these steps, in this order, each before any read
// of the cluster; the first that refuses answers:
//
//  1. only POST: 405, Allow: POST;
//  2. the path is looked up in the index of Ready Receivers, in memory:
//     404 for a path of none. An unknown path costs a map lookup and is
//     not charged to the global limiter, so that a flood of them cannot
//     starve the Receivers;
//  3. the Receiver's token bucket (by UID; --receiver-qps-per-receiver),
//     then the global one (--receiver-qps): 429 with Retry-After. A
//     Receiver that exhausts its own does not slow the others;
//  4. a slot of the deliveries in flight (--receiver-max-in-flight): 503
//     when none is free, so that the bodies held are at most
//     MaxInFlight × (MaxBodyBytes+1) (under twice that for the moment a
//     chunked body's buffer grows);
//  5. a Content-Length over --receiver-max-body-bytes: 413 without reading;
//     the body is read up to that cap plus a byte: 413 when it is over;
//  6. the signature or token on the raw body (webhook.Verify, against the
//     Receiver's secret): 401 for every signature error;
//  7. only then the body is parsed (webhook.Parse): 400 when malformed;
//  8. a ping (GitHub's, Bitbucket Server's): 200;
//  9. an event not in spec.events: 202, nothing done;
//  10. a delivery id seen for this Receiver within --receiver-dedup-window
//     (a bounded LRU; only verified deliveries enter it): 200
//     "duplicate", nothing refreshed;
//  11. a delivery that names no repository and ref or tag: 202;
//  12. ONE list of the Releases of the Receiver's namespace that
//     spec.releases selects (as convoy-apiserver), and a refresh request
//     (pkg/requests) of each whose spec.source or spec.valuesSource the
//     delivery names (match.go), at most MaxRefreshesPerDelivery, on
//     behalf of "receiver NS/NAME (TYPE delivery ID)": 202, or 500 when
//     the list or a refresh failed (the delivery id is then forgotten, so
//     that a redelivery is handled).
//
// The answers are a fixed short text per outcome (text/plain): never the
// Receiver's name, an error or a count. What went wrong is logged with the
// Receiver's namespace and name, never its path (a capability), its
// secret or the body, and counted in convoy_receiver_deliveries_total.
//
// Besides the bodies in flight, the listener's memory is bounded by its
// maps: at most 4096 per-Receiver limiters (those refilled are pruned
// first) and DedupSize delivery ids (UID and an id of at most 128 bytes).
// The server allows HTTP/1.1 only, TLS 1.2 or later, headers of 16 KiB.
package receiver
