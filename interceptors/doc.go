// Package interceptors puts a gRPC server behind a fairseat admission
// scheduler.
//
// [UnaryServerInterceptor] and [StreamServerInterceptor] return plain grpc
// interceptors. Give both the same options:
//
//	opts := []interceptors.Option{
//		interceptors.WithRoutes(interceptors.Routes{
//			"/git.v1.Git/Clone": {Type: "clone", JobID: interceptors.Field("repository")},
//			"/git.v1.Git/*":     {Type: "git"},
//		}),
//	}
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(interceptors.UnaryServerInterceptor(sched, opts...)),
//		grpc.ChainStreamInterceptor(interceptors.StreamServerInterceptor(sched, opts...)),
//	)
//
// They compose with go-grpc-middleware v2: put realip and auth before them,
// so that the client's address and identity are in the context when the
// fairness key is derived, and wrap them in selector to leave services out
// altogether. Routes and options are checked when the interceptors are
// built: a malformed route pattern panics, as http.ServeMux does.
//
// # Routes
//
// [Routes] maps a full method name ("/git.v1.Git/Clone") or a whole service
// ("/git.v1.Git/*") to a [Route]: the job type the call is admitted under
// (registered with the scheduler; "" means the full method name), and how
// its job ID — the resource it works on, which conflict groups exclude — is
// found: [Field] reads a field of the request message through protoreflect,
// [MetadataValue] reads incoming metadata, and any [JobIDFunc] will do. A
// method's own route wins over its service's. Methods without a route pass
// through without waiting, unless [WithDefaultRoute] gives them one.
//
// Calls matched by [WithExempt], and health checks (/grpc.health.v1.Health/*)
// always, bypass admission: they never wait, because a health check queued
// behind the load it reports would make a busy server look dead. The
// scheduler has no seat to lend without queueing, so an exempt call takes no
// seat; it is counted instead, in the scheduler's Counters.Exempt, so that
// operators see it.
//
// # Streams
//
// A streaming route's [StreamMode] says when the call is admitted:
// [HoldStream] (the default) admits before the handler runs and holds the
// seat until it returns; [GateStream] admits before the handler runs and
// releases the seat at once, so only the start of the stream is queued and
// ordered; [FirstMessage] admits when the handler first receives a message,
// so that the job ID can come from it (the request of a server-streaming
// call), and holds the seat until the handler returns. Streams admitted
// before their first message have no request: their JobIDFunc gets nil, so
// Field fails for them (with codes.Internal) and MetadataValue works. The
// scheduler learns each job's cost from how long it holds its seat, so under
// GateStream it learns the cost of starting, not of the stream.
//
// # Who is the caller
//
// The fairness key comes from a [KeyFunc]. The default is
// FirstOf(ClientCert(), ClientIP(64)): the verified mTLS client's SPIFFE ID
// (else its certificate subject), else its IP address. Ready-made sources:
//
//   - [Principal]: the identity an authentication interceptor (go-grpc-middleware's
//     auth) stored in the context; you supply the getter.
//   - [ClientCert]: the verified client certificate's SPIFFE ID or subject.
//   - [TrustedMetadata]: a metadata value such as x-tenant-id, believed only
//     from peers trusted to set it ([PeerIn]) and ignored from others.
//   - [ClientIP]: realip's result when realip ran (it believes forwarding
//     headers only from its trusted peers), else the transport peer's
//     address. IPv4-mapped addresses are unmapped and IPv6 addresses grouped
//     by prefix (/64 by default), so a client cannot multiply its share by
//     rotating addresses.
//
// A source that does not apply to a call returns "", and [FirstOf] chains
// sources. Keys are namespaced by source ("principal:", "spiffe:",
// "subject:", "header:x-tenant-id:", "ip:"), so that a name from one source
// cannot borrow the share of the same name from another, and are the keys
// package httpmw derives, so that one caller reaching the scheduler over
// both transports is one caller; a key longer than
// [WithMaxKeyLen] (128 bytes by default) or not printable UTF-8 is replaced by
// its namespace and a SHA-256 digest. A call whose key cannot be derived (a
// Unix-socket peer has no IP address) is rejected with codes.InvalidArgument,
// or with the status the KeyFunc returned.
//
// # Criticality
//
// A caller may say how critical its call is in metadata
// fairseat-criticality: critical_plus, critical (the default),
// sheddable_plus or sheddable (package criticality). The interceptors
// believe it only from callers [WithCriticalityTrust] accepts ([PeerIn],
// [ClientCertIn], or any predicate over the call's context); from anyone
// else, and when the value is not exactly one level, it is ignored — the
// call is critical — and counted in fairseat.criticality.ignored (by
// reason: untrusted, invalid), never an error to the caller. Without the
// option nobody is trusted. So a client that claims critical_plus gains
// nothing unless the server trusts it.
//
// A believed level is in the handler's context (criticality.FromContext;
// for streams, in the stream's), so that the client interceptors send it
// on the calls the handler makes. A level that an earlier
// interceptor put in the context (from the caller's authenticated
// identity, say) wins over the metadata. The level moves the call's
// priority within its route's job type (admission.Request.PriorityOffset):
// by default sheddable two below the type, sheddable_plus one below,
// critical_plus one above ([WithCriticalityOffsets]), clamped into the
// type's tier. Under load a route's sheddable calls wait while its
// critical calls go first, and aging still bounds how long they wait;
// a level never lifts a call into another route's tier.
//
// # Clients
//
// [UnaryClientInterceptor] and [StreamClientInterceptor] are the client
// side of the same protection, for any gRPC backend:
//
//	conn, err := grpc.NewClient(target,
//		grpc.WithChainUnaryInterceptor(interceptors.UnaryClientInterceptor()),
//		grpc.WithChainStreamInterceptor(interceptors.StreamClientInterceptor()),
//	)
//
// They send the context's criticality (criticality.FromContext; inside a
// handler behind the server interceptors, the caller's) as metadata
// fairseat-criticality, unless the call's metadata has one already, so a
// request keeps its level from service to service.
//
// Adaptive throttling, as the SRE book describes it: per target
// (ClientConn.Target), the interceptor counts the calls of the last 2
// minutes and those the backend accepted — everything but
// codes.ResourceExhausted and codes.Unavailable, which a backend returns
// when it is overloaded (and gRPC when it cannot be reached) — and refuses
// a new call locally with probability max(0, (calls - K·accepts) /
// (calls + 1)), K = 2 ([WithThrottle]). Locally refused calls count as
// calls, so a backend that accepts 10% of what it is offered is sent
// about twice what it accepts instead of ten times, and the traffic comes
// back by itself within a window or two once it accepts again. Calls in
// flight count when they end.
//
// Pushback: a failed call whose response carries a retry delay (the
// grpc-retry-pushback-ms trailer, an errdetails.RetryInfo detail; the
// larger wins, capped at 5 minutes by [WithMaxPushback]) holds back every
// call of that method to that target until the delay has passed: they
// fail at once, locally, without counting in the window.
//
// A call refused locally is never sent. It fails with the status the
// backend would likely have given: the code of the backend's last
// overload response (Unavailable when none is known), or under pushback
// the code of the response that asked for the delay, with a RetryInfo
// detail of the time left. errors.Is(err, [ErrRefusedLocally]) tells a
// local refusal from the backend's own.
//
// Each refusal is an event, fairseat.client.refused, on the span of the
// call's context (if recording), with the decision, the target, the
// method, the window's counts and probability, and the time left; each
// pushback received is an event fairseat.client.pushback. Metrics (scope
// [ScopeName], [WithMeterProvider]; no target or method attribute, whose
// values are unbounded): fairseat.client.requests by
// fairseat.client.decision — accepted or rejected (sent, counted when the
// call ends, as the throttle counts it), throttled or pushed_back (refused
// locally) — and fairseat.client.pushbacks. A call costs one counter
// update.
//
// Memory is bounded per target (a ring of 60 time buckets and at most 64
// methods under pushback) and over targets (1024, least recently used
// forgotten); no goroutine is started per target or per call (a stream
// adds a context.AfterFunc, to count a stream its caller cancelled).
// Each interceptor keeps its own counts: unary and streaming calls to one
// target are throttled separately, each bounded to about K times its own
// accepts.
//
// # Errors and panics
//
// What a client sends is never a reason to panic: hostile metadata (huge,
// malformed, control characters, invalid UTF-8, 10,000 entries), a request
// message without the job ID field, or a peer without an IP address end in
// one of the statuses below (hostile_test.go and the fuzz targets try
// them). A hostile fairseat-criticality (the same values, padded, in other
// cases, repeated) never fails the call: from an untrusted caller it is
// ignored, from a trusted one it counts only if it is exactly one level's
// name in any ASCII case, as described above (hostile_criticality_test.go).
//
// What a server sends back is never a reason to panic either, nor to hold
// calls back longer than WithMaxPushback: a grpc-retry-pushback-ms whose
// first value is not a decimal number of milliseconds (an optional "+",
// digits only: negative, padded, fractional or malformed values, however
// many digits they start with) is ignored, as is a RetryInfo detail
// without a valid positive delay; a delay too long for a time.Duration is
// the cap; the larger of the two counts. However many methods a client
// calls (a proxy forwards what its callers name), a target keeps at most
// 64 under pushback, each name kept in at most 128 bytes
// (hostile_client_internal_test.go, FuzzRetryDelay).
//
// Configuration is checked when the interceptors are built, and
// what cannot work panics there, as http.ServeMux does: a nil scheduler, a
// malformed route pattern or MatchMethods pattern, an invalid StreamMode,
// a Field path that is no proto name, Principal(nil), TrustedMetadata
// with a nil predicate, and an option the server or client interceptors
// cannot use, naming it: WithCriticalityOffsets for a value that is not a
// level; WithThrottle with a window of 1 to 59 ns or negative, or a K
// below 1, NaN or infinite; WithMaxPushback negative. Nil options, a nil
// KeyFunc, StatusFunc or exempt matcher mean the defaults, as do
// WithThrottle's and WithMaxPushback's zeros, WithCriticalityOffsets(nil)
// and WithMeterProvider(nil) (the global provider); any offset is clamped
// by the scheduler into the type's tier; a nil JobID means no job ID;
// FirstOf skips nil sources and with none fails with ErrNoKey; PeerIn()
// and PeerIn of an invalid prefix, ClientCertIn() and ClientCertIn(""),
// and WithCriticalityTrust(nil) trust nobody; WithMaxKeyLen below 80
// means 128 bytes. A StatusFunc's nil or OK status means DefaultStatus's;
// DefaultStatus(ctx, nil) is OK, and AddRetryInfo asks for at least 1 ms,
// whatever d (a nil status stays nil). The client interceptors called
// with a nil ClientConn (gRPC never passes one) count the call for the
// target "". TestBadInput, TestBadInputCriticalityAndClient and
// TestClientNilClientConn try each.
//
// # Rejections
//
// [DefaultStatus] maps why a call was not admitted to its status:
// codes.ResourceExhausted when the caller's own share is the limit (its
// queue is full, it was pushed out by a lighter caller), codes.Unavailable
// when the whole server is (the call waited its job type's MaxWait, the
// scheduler is closing), status.FromContextError when
// the caller gave up while waiting, and codes.Internal for a route whose job
// type the scheduler does not know. A job ID that the request does not
// carry is codes.InvalidArgument (a Field path the message type cannot have
// is codes.Internal). [WithStatusFunc] replaces the mapping.
//
// Both rejection codes carry a retry hint computed from the scheduler's
// estimate of when a seat opens: an errdetails.RetryInfo detail and the
// same delay in the grpc-retry-pushback-ms trailer ([PushbackTrailer], gRFC
// A6), which grpc-go clients honour when their retry policy lists the code.
// The trailer repeats whatever RetryInfo the final status has, so a custom
// StatusFunc controls both through [AddRetryInfo].
package interceptors
