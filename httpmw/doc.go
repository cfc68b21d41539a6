// Package httpmw puts a net/http server behind a fairseat admission
// scheduler.
//
// Wrap the server's handler (usually its *http.ServeMux) with [Middleware],
// and tag each route that should wait for a seat with [Tag], naming its job
// type and where its job ID (the resource it works on) comes from:
//
//	mux := http.NewServeMux()
//	mux.Handle("POST /repos/{repo}/clone", httpmw.Tag("clone", httpmw.PathValue("repo"), cloneHandler))
//	srv := &http.Server{Handler: httpmw.Middleware(sched)(mux)}
//
// # Who is the caller
//
// The fairness key comes from a [KeyFunc]. The default is
// FirstOf(ClientCert(), ClientIP(nil, 64)): the verified mTLS client's
// SPIFFE ID (else its certificate subject), else its IP address. A KeyFunc
// that yields no key rejects the request (400): the empty key belongs to
// background jobs. Forwarding headers
// (X-Forwarded-For, Forwarded) are believed only when the immediate peer is
// inside trusted proxy prefixes ([ClientIP]); a header that names the tenant
// is believed only from trusted peers ([TrustedHeader]). IPv6 clients are
// grouped by prefix (/64 by default) and IPv4-mapped addresses unmapped, so a
// client cannot multiply its share by rotating addresses. Keys are namespaced
// by source ("ip:", "spiffe:", "subject:", "header:", "principal:") and
// bounded in length (hashed beyond [WithMaxKeyLen]).
//
// # Which routes wait
//
// A route wrapped in Tag waits for a seat before its handler runs and holds
// it until the handler returns. Routes without a Tag pass through, unless
// [WithDefaultJobType] is set: then the middleware admits them under the
// default type. To tell tagged from untagged routes before the route runs,
// the middleware asks the wrapped handler which handler will serve the
// request; *http.ServeMux answers that (any handler with the method
// Handler(*http.Request) (http.Handler, string) does). Put Tag directly on the
// route: a Tag hidden inside another wrapper is not seen by this look-ahead,
// and the request is then admitted once, under the default type. A wrapped
// handler that cannot be asked (not a router) leaves every request counted
// as tagged: the default type does not apply behind it, and only its Tags
// wait. Requests
// matched by [WithExempt] (health checks, metrics) never wait; they are
// counted in the scheduler's Counters.Exempt.
//
// # Criticality
//
// A caller may say how critical its request is in header
// Fairseat-Criticality: critical_plus, critical (the default),
// sheddable_plus or sheddable (package criticality). The middleware
// believes it only from callers [WithCriticalityTrust] accepts ([PeerIn],
// [ClientCertIn], or any predicate over the request); from anyone else,
// and when the value is not exactly one level, it is ignored — the request
// is critical — and counted in fairseat.criticality.ignored (by reason:
// untrusted, invalid), never an error to the caller. Without the option
// nobody is trusted, so a client that claims critical_plus gains nothing
// unless the server trusts it. A believed level is in the request's
// context (criticality.FromContext), exempt requests included, so that
// [Transport] sends it on the calls the handler makes; a level an outer
// middleware put in the context wins over the header. The level moves the
// request's priority within its route's job type
// (admission.Request.PriorityOffset): by default sheddable two below,
// sheddable_plus one below, critical_plus one above
// ([WithCriticalityOffsets]), clamped into the type's tier, so that under
// load a route's sheddable requests wait while its critical ones go first,
// with aging still bounding their wait.
//
// # Clients
//
// [Transport] wraps an http.RoundTripper with the client side of the same
// protection, for any HTTP backend:
//
//	client := &http.Client{Transport: httpmw.Transport(http.DefaultTransport)}
//
// It sends the context's criticality as header Fairseat-Criticality
// (unless the request has one), so a request keeps its level from service
// to service. It throttles adaptively, as the SRE book describes: per host
// (the request URL's), it counts the requests of the last 2 minutes and
// those the host accepted — every response but 429 and 503, and every
// error of the wrapped RoundTripper unless the request's context ended —
// and refuses a new request locally with probability max(0, (requests -
// K·accepts) / (requests + 1)), K = 2 ([WithThrottle]); a host that accepts
// 10% of what it is offered is sent about twice what it accepts, and the
// traffic comes back by itself within a window or two once it accepts
// again. A 429 or 503 with Retry-After (seconds or an HTTP date; capped at
// 5 minutes, [WithMaxPushback]) holds back the same kind of request (by
// default the same method and path, [WithCallType]) to that host until
// the delay has passed.
//
// A request refused locally is never sent: RoundTrip closes its body and
// returns a [*RefusedError], which errors.Is matches with
// [ErrRefusedLocally] (through http.Client's *url.Error), and which says
// what the host would likely have answered — 503, or the 429 or 503 whose
// Retry-After is in force — and, under pushback, how long is left.
// Refusals and pushbacks are events on the span of the request's context
// (fairseat.client.refused, fairseat.client.pushback) and metrics
// (fairseat.client.requests by fairseat.client.decision: accepted,
// rejected, throttled, pushed_back; fairseat.client.pushbacks; no host
// attribute).
// Memory is bounded per host and over hosts ([WithMaxBackends], 1024), and
// no goroutine is started.
//
// # Rejections
//
// A request the scheduler turns away gets 429 Too Many Requests when its own
// caller's share is the limit (its queue is full, it was pushed out by a
// lighter caller), and 503 Service Unavailable when the whole server is
// overloaded, the request waited its job type's MaxWait, or the scheduler is
// closing. Both carry Retry-After in seconds, from the scheduler's estimate
// of when a seat opens, and a short body: plain text, or JSON when the client
// accepts application/json ([WithRejectHandler] replaces the writer). A
// request whose client went away while it waited is dropped without writing
// anything. An unregistered job type is the server's bug: 500. A request
// whose job ID or caller cannot be determined (a missing path value, an
// unparsable client address) gets 400.
//
// # Errors and panics
//
// What a client sends is never a reason to panic: malformed, huge,
// control-character or invalid-UTF-8 headers, 10,000 header entries or a
// missing job ID end in one of the statuses above (hostile_test.go and
// FuzzRequest try them). A hostile Fairseat-Criticality (the same values,
// padded, in other cases, repeated) never fails the request: from an
// untrusted caller it is ignored, from a trusted one it counts only if it
// is exactly one level's name in any ASCII case, as described above
// (over HTTP/1.1, net/http has trimmed the spaces around it and refused
// control characters before the middleware sees it;
// hostile_criticality_test.go).
//
// What a host sends back is never a reason to panic either, nor to hold
// requests back longer than WithMaxPushback: a Retry-After whose first
// value is neither delay-seconds (digits only, spaces around ignored)
// nor an HTTP date in the future is ignored — negative, fractional or
// malformed values, however many digits they start with, dates past or
// not in GMT — and one too long for a time.Duration is the cap. However
// many hosts and paths a client is sent to (a redirect names any), it
// keeps at most WithMaxBackends hosts and 64 kinds of request under
// pushback per host, each name kept in at most 128 bytes
// (hostile_transport_test.go, FuzzRetryAfter).
//
// Configuration is checked where it is given:
// Middleware panics on a nil scheduler and Tag on a nil handler, as
// http.Handle does, Principal on a nil getter, and Middleware and
// Transport on an option they cannot use, naming it:
// WithCriticalityOffsets for a value that is not a level; WithThrottle
// with a window of 1 to 59 ns or negative, or a K below 1, NaN or
// infinite; WithMaxPushback or WithMaxBackends negative. Nil options, a
// nil KeyFunc, RejectHandler or exempt matcher, and WithMaxKeyLen below
// 80 mean the defaults, as do Transport(nil, ...) (http.DefaultTransport),
// the zeros of WithThrottle, WithMaxPushback and WithMaxBackends,
// WithCallType(nil), WithCriticalityOffsets(nil) and
// WithMeterProvider(nil) (the global provider); any offset is clamped by
// the scheduler into the type's tier; a call type of any length or
// content is bounded (hashed), and "" holds the whole host back; a nil
// jobID function means no job ID; FirstOf skips nil sources, and with
// none fails with ErrNoKey; PeerIn() and PeerIn of an invalid prefix,
// ClientCertIn() and ClientCertIn(""), and WithCriticalityTrust(nil)
// trust nobody. ForwardedClient accepts any peer and header (an invalid
// peer is returned as it is). RejectionFor(nil) is a 500, and
// WriteRejection writes a Status that is no HTTP status as 500 and a nil
// Err as the status text. Transport's RoundTrip given a nil request or
// one without a URL returns an error, and adds the level to a request
// with a nil Header in a header of its own (bad_input_test.go tries
// each).
//
// The middleware wraps no http.ResponseWriter, so http.ResponseController,
// flushing, hijacking and every optional interface of the server's writer
// work as without it.
package httpmw
