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
// and the request is then admitted once, under the default type. Requests
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
// the calls the handler makes can carry it on; a level an outer
// middleware put in the context wins over the header. The level moves the
// request's priority within its route's job type
// (admission.Request.PriorityOffset): by default sheddable two below,
// sheddable_plus one below, critical_plus one above
// ([WithCriticalityOffsets]), clamped into the type's tier, so that under
// load a route's sheddable requests wait while its critical ones go first,
// with aging still bounding their wait.
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
// The middleware wraps no http.ResponseWriter, so http.ResponseController,
// flushing, hijacking and every optional interface of the server's writer
// work as without it.
package httpmw
