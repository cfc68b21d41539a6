package interceptors

import (
	"context"
	"fmt"
	"strings"

	"github.com/fairseat/fairseat/admission"
)

// StreamMode says when a streaming call routed to a job type is admitted and
// how long it holds its seat. Unary calls always hold their seat while the
// handler runs. The zero value is HoldStream.
type StreamMode int

const (
	// HoldStream admits the stream before its handler runs and holds the seat
	// until the handler returns. It is the default.
	HoldStream StreamMode = iota
	// GateStream admits the stream before its handler runs and releases the
	// seat at once: admission only gates the start (and so still queues,
	// sheds and orders callers fairly), but long streams do not occupy seats.
	GateStream
	// FirstMessage admits the stream when the handler first receives a
	// message, so that the job ID can come from that message (a
	// server-streaming call's request), and holds the seat until the handler
	// returns. The handler's first RecvMsg waits for the seat and returns the
	// rejection if there is one. A handler that sends before it has received
	// is admitted at that send, with a nil request.
	FirstMessage
)

func (m StreamMode) String() string {
	switch m {
	case HoldStream:
		return "HoldStream"
	case GateStream:
		return "GateStream"
	case FirstMessage:
		return "FirstMessage"
	}
	return fmt.Sprintf("StreamMode(%d)", int(m))
}

// A Route says how calls to a method are admitted: under which job type,
// working on which job ID, and, for streams, when. The zero value admits
// under the method's full name as job type, with no job ID, holding the
// seat for the whole call. It is a plain value.
type Route struct {
	// Type is the job type the calls are admitted under; it must be
	// registered with the scheduler. "" means the full method name
	// ("/git.v1.Git/Clone").
	Type admission.JobType
	// JobID names the resource the call works on (see Field and
	// MetadataValue). nil means no job ID: such calls conflict with each other
	// if their type has a ConflictGroup, as the scheduler treats "" as one
	// resource.
	JobID JobIDFunc
	// Stream is the admission mode of streaming calls; ignored for unary
	// calls.
	Stream StreamMode
}

// Routes maps method patterns to routes. A pattern is a full method name,
// "/package.Service/Method", or a whole service, "/package.Service/*". A
// method's own entry wins over its service's. A nil Routes routes nothing.
// WithRoutes copies it, so the caller may reuse it.
type Routes map[string]Route

// routeTable is Routes compiled for lookup without allocation. It is built
// once and only read afterwards.
type routeTable struct {
	methods  map[string]*Route // by full method name
	services map[string]*Route // by "/package.Service/"
	fallback *Route            // unrouted methods; nil = pass through
}

// compileRoutes checks every pattern and builds the table. A bad pattern or
// stream mode is a programming error in static configuration, reported by
// panicking, as http.ServeMux.Handle does.
func compileRoutes(rs Routes, fallback *Route) routeTable {
	t := routeTable{
		methods:  make(map[string]*Route, len(rs)),
		services: make(map[string]*Route),
	}
	for pattern, r := range rs {
		checkMode(pattern, r.Stream)
		svc, method, ok := splitMethod(pattern)
		if !ok {
			panic(fmt.Sprintf("interceptors: route pattern %q is not \"/package.Service/Method\" or \"/package.Service/*\"", pattern))
		}
		if method == "*" {
			t.services["/"+svc+"/"] = &r
		} else {
			t.methods[pattern] = &r
		}
	}
	if fallback != nil {
		checkMode("default route", fallback.Stream)
		r := *fallback
		t.fallback = &r
	}
	return t
}

func checkMode(where string, m StreamMode) {
	if m < HoldStream || m > FirstMessage {
		panic(fmt.Sprintf("interceptors: %s: invalid %v", where, m))
	}
}

// lookup returns the route of fullMethod, or nil if the call passes through.
func (t *routeTable) lookup(fullMethod string) *Route {
	if r, ok := t.methods[fullMethod]; ok {
		return r
	}
	if i := strings.LastIndexByte(fullMethod, '/'); i > 0 {
		if r, ok := t.services[fullMethod[:i+1]]; ok {
			return r
		}
	}
	return t.fallback
}

// splitMethod splits "/package.Service/Method" into its two names; neither
// may be empty or contain a slash.
func splitMethod(fullMethod string) (service, method string, ok bool) {
	if !strings.HasPrefix(fullMethod, "/") {
		return "", "", false
	}
	service, method, ok = strings.Cut(fullMethod[1:], "/")
	if !ok || service == "" || method == "" || strings.Contains(method, "/") {
		return "", "", false
	}
	return service, method, true
}

// healthService is exempt from admission whatever the configuration: a
// health check that waits in the queue behind the load it is meant to report
// would make a busy server look dead.
const healthService = "/grpc.health.v1.Health/"

// MatchMethods returns a matcher for WithExempt that matches the given
// patterns, with the syntax of Routes keys ("/package.Service/Method" or
// "/package.Service/*"). It panics on a malformed pattern.
func MatchMethods(patterns ...string) func(ctx context.Context, fullMethod string) bool {
	rs := make(Routes, len(patterns))
	for _, p := range patterns {
		rs[p] = Route{}
	}
	t := compileRoutes(rs, nil)
	return func(_ context.Context, fullMethod string) bool {
		return t.lookup(fullMethod) != nil
	}
}
