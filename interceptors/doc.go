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
// for streams, in the stream's), so that the calls the handler makes can
// carry it on. A level that an earlier
// interceptor put in the context (from the caller's authenticated
// identity, say) wins over the metadata. The level moves the call's
// priority within its route's job type (admission.Request.PriorityOffset):
// by default sheddable two below the type, sheddable_plus one below,
// critical_plus one above ([WithCriticalityOffsets]), clamped into the
// type's tier. Under load a route's sheddable calls wait while its
// critical calls go first, and aging still bounds how long they wait;
// a level never lifts a call into another route's tier.
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
