package interceptors_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	grpcmw "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/realip"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/interceptors"
)

// cloneTypes registers "clone" (cost 10 s) in conflict group "git".
var cloneTypes = map[admission.JobType]admission.JobTypeConfig{
	"clone": {DefaultCost: 10 * time.Second, ConflictGroup: "git", Priority: 8},
}

var cloneRoutes = interceptors.WithRoutes(interceptors.Routes{
	cloneMethod: {Type: "clone", JobID: interceptors.Field("value")},
})

// gatedClone makes Clone handlers wait at g under the repository's name.
func gatedClone(g *gate) func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	return func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		if err := g.enter(ctx, req.GetValue()); err != nil {
			return nil, err
		}
		return wrapperspb.String("cloned " + req.GetValue()), nil
	}
}

// describe prints the scheduler's state for failure messages.
func describe(s *admission.Scheduler) string {
	snap := s.Snapshot()
	var b strings.Builder
	fmt.Fprintf(&b, "in use %d/%d, queued %d", snap.InUse, snap.Capacity, snap.Queued)
	for _, q := range snap.Queue {
		fmt.Fprintf(&b, "\n  queued %s %q key %q blocked by %q", q.Type, q.JobID, q.Key, q.BlockedBy)
	}
	fmt.Fprintf(&b, "\n  counters %+v", snap.Counters)
	return b.String()
}

// wantEntered checks which handlers entered the gate since the last check.
func wantEntered(t *testing.T, e *env, g *gate, want ...string) {
	t.Helper()
	if got := g.drain(); !slices.Equal(got, want) {
		t.Fatalf("handlers entered %q, want %q\n%s", got, want, describe(e.sched))
	}
}

func wantSeats(t *testing.T, e *env, inUse, queued int) {
	t.Helper()
	if snap := e.sched.Snapshot(); snap.InUse != inUse || snap.Queued != queued {
		t.Fatalf("want %d in use and %d queued\n%s", inUse, queued, describe(e.sched))
	}
}

func wantResult(t *testing.T, results <-chan result, name string, code codes.Code) {
	t.Helper()
	select {
	case r := <-results:
		if r.name != name || status.Code(r.err) != code {
			t.Fatalf("call %s ended with %v, want call %s with %v", r.name, r.err, name, code)
		}
	default:
		t.Fatalf("call %s has not ended", name)
	}
}

func TestUnaryHoldsSeatWhileHandlerRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		e := newEnv(t, envConfig{types: cloneTypes, opts: []interceptors.Option{cloneRoutes}})
		e.git.clone = gatedClone(g)
		cc := e.client("203.0.113.7:5000", nil)
		results := make(chan result, 2)
		for _, repo := range []string{"a", "b"} {
			go func() { results <- result{repo, clone(t.Context(), cc, repo)} }()
			synctest.Wait()
		}
		wantEntered(t, e, g, "a")
		wantSeats(t, e, 1, 1)

		g.open("a")
		synctest.Wait()
		wantResult(t, results, "a", codes.OK)
		wantEntered(t, e, g, "b")
		wantSeats(t, e, 1, 0)

		g.open("b")
		synctest.Wait()
		wantResult(t, results, "b", codes.OK)
		wantSeats(t, e, 0, 0)
	})
}

// Two RPCs on the same repository never run at once, even with free seats;
// an RPC on another repository is not held up behind them.
func TestConflictingCallsExclude(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		e := newEnv(t, envConfig{sched: admission.Config{Capacity: 4}, types: cloneTypes, opts: []interceptors.Option{cloneRoutes}})
		e.git.clone = func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			return wrapperspb.String("ok"), g.enter(ctx, req.GetValue())
		}
		cc := e.client("203.0.113.7:5000", nil)
		results := make(chan result, 3)
		for i, repo := range []string{"linux", "linux", "go"} {
			name := fmt.Sprint(repo, i)
			go func() { results <- result{name, clone(t.Context(), cc, repo)} }()
			synctest.Wait()
		}
		wantEntered(t, e, g, "linux", "go")
		if q := e.sched.Snapshot().Queue; len(q) != 1 || q[0].JobID != "linux" || q[0].BlockedBy != "conflict" {
			t.Fatalf("want the second linux clone blocked by the conflict\n%s", describe(e.sched))
		}
		g.open("go")
		synctest.Wait()
		wantResult(t, results, "go2", codes.OK)
		wantEntered(t, e, g) // the second linux clone still waits for the first
		g.open("linux")      // lets both linux handlers through, one after the other
		synctest.Wait()
		wantEntered(t, e, g, "linux")
		for range 2 {
			if r := <-results; !strings.HasPrefix(r.name, "linux") || r.err != nil {
				t.Fatalf("call %s ended with %v, want a linux clone ending with OK", r.name, r.err)
			}
		}
	})
}

// fairnessOrder runs the scenario of the fairness tests: capacity 1, heavy
// takes the seat and queues three more clones, then light queues one. It
// returns the order in which the queued clones ran, and the fairness keys
// the scheduler saw.
func fairnessOrder(t *testing.T, e *env, heavy, light func(repo string) error) (order []string, keys []string) {
	t.Helper()
	g := newGate()
	e.git.clone = gatedClone(g)
	results := make(chan result, 5)
	start := func(name string, call func(string) error) {
		go func() { results <- result{name, call(name)} }()
		synctest.Wait()
	}
	start("heavy0", heavy)
	wantEntered(t, e, g, "heavy0")
	for _, name := range []string{"heavy1", "heavy2", "heavy3"} {
		start(name, heavy)
	}
	start("light", light)
	for _, q := range e.sched.Snapshot().Queue {
		if !slices.Contains(keys, q.Key) {
			keys = append(keys, q.Key)
		}
	}
	open := "heavy0"
	for range 4 {
		time.Sleep(10 * time.Second) // each clone takes what it was estimated to
		g.open(open)
		synctest.Wait()
		<-results
		next := g.drain()
		if len(next) != 1 {
			t.Fatalf("after %s: %q entered, want one\n%s", open, next, describe(e.sched))
		}
		open = next[0]
		order = append(order, open)
	}
	g.open(open)
	synctest.Wait()
	<-results
	return order, keys
}

var lightFirst = []string{"light", "heavy1", "heavy2", "heavy3"}

// A tenant named by a trusted proxy's x-tenant-id is served fairly against
// a heavier tenant behind the same proxy; the same metadata from an
// untrusted peer is ignored.
func TestFairnessByTrustedMetadata(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		proxies := interceptors.PeerIn(netip.MustParsePrefix("10.0.0.0/8"))
		e := newEnv(t, envConfig{types: cloneTypes, opts: []interceptors.Option{cloneRoutes,
			interceptors.WithKeyFunc(interceptors.FirstOf(
				interceptors.TrustedMetadata("X-Tenant-ID", proxies),
				interceptors.ClientIP(0)))}})
		proxy := e.client("10.1.2.3:443", nil)
		tenant := func(name string) func(string) error {
			return func(repo string) error {
				ctx := metadata.AppendToOutgoingContext(t.Context(), "x-tenant-id", name)
				return clone(ctx, proxy, repo)
			}
		}
		order, keys := fairnessOrder(t, e, tenant("heavy"), tenant("light"))
		if !slices.Equal(order, lightFirst) {
			t.Errorf("order %q, want %q", order, lightFirst)
		}
		if want := []string{"header:x-tenant-id:light", "header:x-tenant-id:heavy"}; !slices.Equal(keys, want) {
			t.Errorf("keys %q, want %q", keys, want)
		}

		// A client that claims a tenant without going through the proxy is
		// known by its address.
		g := newGate()
		e.git.clone = gatedClone(g)
		spoofer := e.client("203.0.113.9:5000", nil)
		done := make(chan error, 1)
		go func() {
			done <- clone(metadata.AppendToOutgoingContext(t.Context(), "x-tenant-id", "light"), spoofer, "x")
		}()
		synctest.Wait()
		if ks := e.sched.Snapshot().Keys; len(ks) != 1 || ks[0].Key != "ip:203.0.113.9" {
			t.Errorf("untrusted peer's key: %+v, want ip:203.0.113.9", ks)
		}
		g.open("x")
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// mTLS clients are told apart by their SPIFFE IDs (or certificate
// subjects) and served fairly.
func TestFairnessByClientCertificate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, envConfig{types: cloneTypes, mtls: true, opts: []interceptors.Option{cloneRoutes}})
		heavyCert := e.ca.spiffeCert(t, "spiffe://example.org/ns/ci/sa/heavy")
		lightCert := e.ca.subjectCert(t, "light")
		heavy := e.client("192.0.2.1:1000", &heavyCert)
		light := e.client("192.0.2.1:1001", &lightCert) // same address: only the certificate tells them apart
		order, keys := fairnessOrder(t, e,
			func(repo string) error { return clone(t.Context(), heavy, repo) },
			func(repo string) error { return clone(t.Context(), light, repo) })
		if !slices.Equal(order, lightFirst) {
			t.Errorf("order %q, want %q", order, lightFirst)
		}
		want := []string{"subject:CN=light,O=fairseat", "spiffe:spiffe://example.org/ns/ci/sa/heavy"}
		if !slices.Equal(keys, want) {
			t.Errorf("keys %q, want %q", keys, want)
		}

		// Without a certificate the default key is the address.
		anon := e.client("192.0.2.1:1002", nil)
		g := newGate()
		e.git.clone = gatedClone(g)
		done := make(chan error, 1)
		go func() { done <- clone(t.Context(), anon, "x") }()
		synctest.Wait()
		if ks := e.sched.Snapshot().Keys; len(ks) != 1 || ks[0].Key != "ip:192.0.2.1" {
			t.Errorf("anonymous client's key: %+v, want ip:192.0.2.1", ks)
		}
		g.open("x")
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// Unrouted methods pass through by default, and are admitted under the
// default route when one is set; health checks are never queued and are
// counted as exempt, as are calls WithExempt matches.
func TestPassThroughDefaultRouteAndExempt(t *testing.T) {
	for _, tc := range []struct {
		name         string
		opts         []interceptors.Option
		pingAdmitted bool
		exempt       uint64
	}{
		{"pass-through", nil, false, 1},
		{"default route", []interceptors.Option{interceptors.WithDefaultRoute(interceptors.Route{Type: "other"})}, true, 1},
		{"exempt", []interceptors.Option{
			interceptors.WithDefaultRoute(interceptors.Route{Type: "other"}),
			interceptors.WithExempt(interceptors.MatchMethods("/other.v1.Other/*")),
		}, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				types := map[admission.JobType]admission.JobTypeConfig{
					"clone": cloneTypes["clone"],
					"other": {Priority: 8},
				}
				e := newEnv(t, envConfig{types: types, opts: append([]interceptors.Option{cloneRoutes}, tc.opts...)})
				g := newGate()
				e.git.clone = gatedClone(g)
				cc := e.client("203.0.113.7:5000", nil)
				go clone(t.Context(), cc, "busy") // takes the only seat
				synctest.Wait()
				wantEntered(t, e, g, "busy")

				if _, err := healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
					t.Fatalf("health check: %v", err)
				}
				ping := make(chan error, 1)
				go func() { ping <- cc.Invoke(t.Context(), pingMethod, wrapperspb.String(""), new(wrapperspb.StringValue)) }()
				synctest.Wait()
				select {
				case err := <-ping:
					if tc.pingAdmitted {
						t.Fatalf("Ping ran (%v) while the only seat was taken", err)
					}
					if err != nil {
						t.Fatal(err)
					}
				default:
					if !tc.pingAdmitted {
						t.Fatalf("Ping waits for a seat\n%s", describe(e.sched))
					}
					wantSeats(t, e, 1, 1)
				}
				g.open("busy")
				synctest.Wait()
				if tc.pingAdmitted {
					if err := <-ping; err != nil {
						t.Fatal(err)
					}
				}
				if got := e.sched.Snapshot().Counters.Exempt; got != tc.exempt {
					t.Errorf("Counters.Exempt = %d, want %d", got, tc.exempt)
				}
			})
		})
	}
}

// A KeyFunc that finds no key ("" and no error) gets the call rejected
// with InvalidArgument before the scheduler sees it: "" is the key of
// background jobs, never a caller's.
func TestEmptyKeyRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		noKey := interceptors.WithKeyFunc(func(context.Context) (string, error) { return "", nil })
		e := newEnv(t, envConfig{types: cloneTypes, opts: []interceptors.Option{cloneRoutes, noKey}})
		cc := e.client("203.0.113.7:5000", nil)
		err := clone(t.Context(), cc, "linux")
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "cannot identify the caller") {
			t.Fatalf("a call with no key: %v, want InvalidArgument saying the caller cannot be identified", err)
		}
		if c := e.sched.Snapshot().Counters; c.Submitted != 0 {
			t.Errorf("the scheduler saw %d requests, want none", c.Submitted)
		}
	})
}

// A zero Route admits its calls under the method's full name as job type.
func TestZeroRouteUsesTheMethodName(t *testing.T) {
	for _, registered := range []bool{false, true} {
		t.Run(fmt.Sprint("registered=", registered), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				types := map[admission.JobType]admission.JobTypeConfig{"clone": cloneTypes["clone"]}
				if registered {
					types[pingMethod] = admission.JobTypeConfig{Priority: 8}
				}
				e := newEnv(t, envConfig{types: types, opts: []interceptors.Option{
					interceptors.WithRoutes(interceptors.Routes{pingMethod: {}})}})
				cc := e.client("203.0.113.7:5000", nil)
				err := cc.Invoke(t.Context(), pingMethod, wrapperspb.String(""), new(wrapperspb.StringValue))
				switch {
				case registered && err != nil:
					t.Fatalf("Ping under its registered method name: %v", err)
				case !registered && (status.Code(err) != codes.Internal || !strings.Contains(err.Error(), pingMethod)):
					t.Fatalf("Ping with no type of its name: %v, want Internal naming %s", err, pingMethod)
				}
				if c := e.sched.Snapshot().Counters; registered && c.Submitted != 1 {
					t.Errorf("the scheduler admitted %d requests, want the ping", c.Submitted)
				}
			})
		})
	}
}

// The interceptors compose with go-grpc-middleware v2: realip before them
// finds the client behind a trusted proxy, auth before them stores the
// identity Principal reads, and selector around them leaves a service out.
func TestComposesWithGoGRPCMiddleware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type userKey struct{}
		authenticate := func(ctx context.Context) (context.Context, error) {
			token, err := auth.AuthFromMD(ctx, "bearer")
			if err != nil {
				return ctx, nil // anonymous callers are known by address
			}
			return context.WithValue(ctx, userKey{}, token), nil
		}
		principal := func(ctx context.Context) (string, bool) {
			u, ok := ctx.Value(userKey{}).(string)
			return u, ok
		}
		proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
		notOther := selector.MatchFunc(func(_ context.Context, c grpcmw.CallMeta) bool { return c.Service != "other.v1.Other" })
		e := newEnv(t, envConfig{types: cloneTypes,
			outer: []grpc.UnaryServerInterceptor{
				realip.UnaryServerInterceptor(proxies, []string{realip.XForwardedFor}),
				auth.UnaryServerInterceptor(authenticate),
			},
			wrap: func(ours grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
				return selector.UnaryServerInterceptor(ours, notOther)
			},
			opts: []interceptors.Option{cloneRoutes,
				interceptors.WithDefaultRoute(interceptors.Route{Type: "unregistered"}),
				interceptors.WithKeyFunc(interceptors.FirstOf(interceptors.Principal(principal), interceptors.ClientIP(0)))},
		})
		g := newGate()
		e.git.clone = gatedClone(g)
		proxy := e.client("10.1.1.1:443", nil)
		direct := e.client("203.0.113.9:5000", nil)
		for _, tc := range []struct {
			cc   *grpc.ClientConn
			md   []string
			want string
		}{
			{proxy, []string{"x-forwarded-for", "198.51.100.4"}, "ip:198.51.100.4"},
			{proxy, []string{"x-forwarded-for", "198.51.100.4", "authorization", "Bearer alice"}, "principal:alice"},
			{direct, []string{"x-forwarded-for", "198.51.100.4"}, "ip:203.0.113.9"}, // spoofed
		} {
			repo := tc.want
			done := make(chan error, 1)
			go func() { done <- clone(metadata.AppendToOutgoingContext(t.Context(), tc.md...), tc.cc, repo) }()
			synctest.Wait()
			if ks := e.sched.Snapshot().Keys; len(ks) != 1 || ks[0].Key != tc.want {
				t.Errorf("call with %q: keys %+v, want %s", tc.md, ks, tc.want)
			}
			g.open(repo)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		// Ping would be refused under the unregistered default type, but
		// selector keeps it away from the interceptor.
		if err := direct.Invoke(t.Context(), pingMethod, wrapperspb.String(""), new(wrapperspb.StringValue)); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	})
}
