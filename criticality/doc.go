// Package criticality names how much a request matters when a server must
// choose what waits: the four levels of Google's SRE book ("Handling
// Overload"), shared by fairseat's gRPC interceptors, its HTTP middleware
// and transport, and the code between them.
//
// A caller states a level in gRPC metadata [MetadataKey] or HTTP header
// [Header]: critical_plus, critical (the default), sheddable_plus,
// sheddable. A server behind fairseat believes it only from callers it
// trusts (an option of each adapter, by mTLS identity or peer address);
// from anyone else, and when the value is not a level, it is ignored —
// treated as critical — and counted, never an error to the caller. So a
// client that claims critical_plus without being trusted gets exactly what
// critical gets: spoofing gains nothing.
//
// A level the server believed is in the request's context ([FromContext]),
// and the client interceptors and transport send the context's level on
// the calls the handler makes ([NewContext] sets it for a call of one's
// own), so that a tree of requests keeps its criticality from service to
// service. A request without a level sends none, and is critical wherever
// it arrives.
//
// The levels order requests within one route: the adapters map each to a
// priority offset (admission.Request.PriorityOffset; by default sheddable
// two below the route's type, sheddable_plus one below, critical_plus one
// above), so that under overload sheddable work waits while critical work
// of the same route goes first, and aging still bounds how long it waits.
// A level never lifts a request into another route's tier.
//
// # Errors and panics
//
// [Parse] accepts exactly the four names, in any ASCII case, and fails on
// anything else — empty, padded with spaces, with control characters or
// invalid UTF-8, of any length — with an error wrapping [ErrInvalid] that
// quotes at most 32 bytes of the input (its cost is bounded by the
// longest name, not by the input). [Level.String] names a value that is
// not a level "Level(n)". [NewContext] stores only a valid level (it
// returns ctx as it is for any other value) and panics on a nil ctx, as
// context.WithValue does; [FromContext] of a nil ctx is Critical and
// false. bad_input_test.go tries each, and FuzzParse fuzzes Parse.
package criticality
