// Package throttle is the client side of overload that fairseat's client
// interceptors (package interceptors) and HTTP transport (package httpmw)
// share: adaptive throttling as Google's SRE book describes it ("Handling
// Overload"), and the backends' retry pushback, in one state machine that
// takes the time and the random draw as arguments.
//
// # Adaptive throttling
//
// For each backend (a gRPC target, an HTTP host) a [Throttle] counts, over
// a sliding window (2 minutes by default), the requests the application
// attempted and the requests the backend accepted. A new request is
// refused locally, without reaching the backend, with probability
//
//	p = max(0, (requests - K·accepts) / (requests + 1))
//
// (K = 2 by default). A request sent to the backend counts when its
// outcome is known (requests in flight have none yet: counting them would
// make a burst of calls to a backend just met throttle itself, as
// grpc-go's own adaptive throttler also avoids), a request refused
// locally counts at once. Requests refused locally count as requests:
// while the backend accepts little, the client sends it about K times
// what it accepts, and as soon as it accepts more, p falls and the
// traffic comes back — no timer, no state beyond the counts. A response
// that says the backend is overloaded
// (ResourceExhausted, Unavailable, 429, 503: the adapters decide) is not
// an accept; anything else is, even an error, since the backend did the
// work of answering it.
//
// The window is a ring of 60 buckets of Window/60 each, with running
// totals: a decision touches one bucket and clears the buckets that the
// time since the last decision skipped, so memory per backend is fixed
// (about 1 KiB) and the window slides in steps of Window/60.
//
// # Pushback
//
// A backend that answers with a retry delay (gRPC's grpc-retry-pushback-ms
// trailer or RetryInfo detail, HTTP's Retry-After) asks the client not to
// call it again for that long. The Throttle records the delay per backend
// and kind of call (a gRPC method, an HTTP route), and until it has passed
// every such request is refused locally at once, with the code of the
// response that asked and the time left. These refusals are not counted in
// the window: the backend never had a chance to accept them. A delay is
// capped (5 minutes by default), so that one response cannot silence a
// backend for good, and each backend remembers at most 64 kinds of call
// under pushback (when full, the one whose delay ends first gives way).
//
// # Memory, concurrency, time
//
// Backends live in an LRU of bounded size (1024 by default); a backend
// evicted and seen again starts with empty counts. Backend and call names
// longer than 128 bytes are kept as a digest (clientkey.Bound; names are
// what the adapters' callers or a redirect chose), so that a backend's
// memory is bounded in bytes, not only in entries ([Throttle.Footprint]
// reports it). One mutex guards all
// state; decisions run no goroutine and arm no timer. Time and the random
// source are arguments, so that the adapters read the clock once per call
// and tests are deterministic. An instant is a time.Duration, a reading of
// a [Clock] (the monotonic time since the Clock was made; tests count
// from an origin of their own), not a time.Time: one clock reading
// instead of two, and integer comparisons. A now before an earlier one (a
// clock that went back) counts in the newest bucket, and lengthens the
// time left of a pushback by as much, past MaxPushback; a Clock's
// readings never go back.
package throttle
