package interceptors_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/interceptors"
	"github.com/fairseat/fairseat/internal/capacitytest"
	"github.com/fairseat/fairseat/internal/oteltest"
)

// seeded returns a deterministic random source for the throttle's draws.
func seeded() interceptors.ClientOption {
	return interceptors.WithRand(rand.New(rand.NewPCG(1, 2)).Float64)
}

// A server that accepts 5 of the 50 calls a second its client makes (it
// rejects 90%) sees about K = 2 times what it accepts once the client's
// window (10 s) has filled; the client refuses the rest locally. When the
// server recovers, the client's traffic comes back within two windows.
func TestClientThrottlesOverloadedServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, envConfig{types: cloneTypes})
		b := capacitytest.New(5)
		e.git.clone = func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			if !b.Admit(time.Now()) {
				return nil, status.Error(codes.Unavailable, "over capacity")
			}
			return wrapperspb.String("ok"), nil
		}
		cc := e.client("203.0.113.7:5000", nil, grpc.WithUnaryInterceptor(
			interceptors.UnaryClientInterceptor(interceptors.WithThrottle(10*time.Second, 2), seeded())))
		capacitytest.Overload(t, b, func() bool {
			err := clone(t.Context(), cc, "r")
			switch {
			case errors.Is(err, interceptors.ErrRefusedLocally):
				if status.Code(err) != codes.Unavailable {
					t.Fatalf("local refusal %v, want the server's code, Unavailable", err)
				}
				return true
			case err != nil && status.Code(err) != codes.Unavailable:
				t.Fatalf("call: %v", err)
			}
			return false
		})
	})
}

// pushbackServer rejects the first call of each method with code and the
// retry delay of its trailer and RetryInfo (either may be empty) and
// accepts the others; it counts the calls it sees.
type pushbackServer struct {
	mu      sync.Mutex
	code    codes.Code
	trailer string
	info    time.Duration
	seen    map[string]int
}

func (p *pushbackServer) handle(ctx context.Context, method string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[method]++
	if p.seen[method] > 1 {
		return nil
	}
	if p.trailer != "" {
		_ = grpc.SetTrailer(ctx, metadata.Pairs(interceptors.PushbackTrailer, p.trailer))
	}
	st := status.New(p.code, "go away")
	if p.info != 0 {
		st, _ = st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(p.info)})
	}
	return st.Err()
}

func (p *pushbackServer) count(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[method]
}

// wantRefused checks that err is a local refusal with code and a
// RetryInfo of retry.
func wantRefused(t *testing.T, err error, code codes.Code, retry time.Duration) {
	t.Helper()
	st, _ := status.FromError(err)
	if !errors.Is(err, interceptors.ErrRefusedLocally) || st.Code() != code || !strings.Contains(st.Message(), "refused locally") {
		t.Fatalf("got %v, want a local refusal with %v", err, code)
	}
	// What a log line shows: the code, and that no call was sent.
	if msg := err.Error(); !strings.Contains(msg, "code = "+code.String()) || !strings.Contains(msg, "refused locally") {
		t.Errorf("the error reads %q, want its code %v and \"refused locally\"", msg, code)
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().AsDuration() == retry {
			return
		}
	}
	t.Fatalf("%v: want RetryInfo %v, details %v", err, retry, st.Details())
}

// After a pushback no call of that method reaches the server until the
// delay has passed, to the millisecond of fake time, whether the delay
// came as the trailer, as RetryInfo, or both (the larger wins); other
// methods are not held back.
func TestClientHonoursPushback(t *testing.T) {
	for _, tc := range []struct {
		name    string
		code    codes.Code
		trailer string
		info    time.Duration
		want    time.Duration
	}{
		{"trailer", codes.ResourceExhausted, "1234", 0, 1234 * time.Millisecond},
		{"RetryInfo", codes.Unavailable, "", 2500 * time.Millisecond, 2500 * time.Millisecond},
		{"both", codes.Unavailable, "700", 300 * time.Millisecond, 700 * time.Millisecond},
		{"an error that is not overload", codes.Aborted, "50", 0, 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, envConfig{types: cloneTypes})
				ps := &pushbackServer{code: tc.code, trailer: tc.trailer, info: tc.info, seen: map[string]int{}}
				e.git.clone = func(ctx context.Context, _ *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
					return wrapperspb.String("ok"), ps.handle(ctx, cloneMethod)
				}
				cc := e.client("203.0.113.7:5000", nil, grpc.WithUnaryInterceptor(interceptors.UnaryClientInterceptor(seeded())))
				if err := clone(t.Context(), cc, "r"); status.Code(err) != tc.code || errors.Is(err, interceptors.ErrRefusedLocally) {
					t.Fatalf("first call: %v, want the server's %v", err, tc.code)
				}
				time.Sleep(tc.want - time.Millisecond)
				wantRefused(t, clone(t.Context(), cc, "r"), tc.code, time.Millisecond)
				if err := cc.Invoke(t.Context(), pingMethod, wrapperspb.String("x"), new(wrapperspb.StringValue)); err != nil {
					t.Errorf("another method was held back: %v", err)
				}
				if n := ps.count(cloneMethod); n != 1 {
					t.Fatalf("the server saw %d calls during the pushback, want only the first", n)
				}
				time.Sleep(time.Millisecond)
				if err := clone(t.Context(), cc, "r"); err != nil {
					t.Fatalf("after the pushback: %v", err)
				}
				if n := ps.count(cloneMethod); n != 2 {
					t.Fatalf("the server saw %d calls, want 2", n)
				}
			})
		})
	}
}

// The interceptor asks gRPC for the trailer whether or not the call has
// options of its own, per call or from the dial options: the pushback
// is honoured either way, and a caller's own grpc.Trailer is still
// filled.
func TestClientPushbackWithCallOptions(t *testing.T) {
	for _, tc := range []struct {
		name        string
		dialDefault bool // the caller's options are dial defaults, not per call
	}{
		{"per call", false},
		{"dial defaults", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, envConfig{types: cloneTypes})
				ps := &pushbackServer{code: codes.ResourceExhausted, trailer: "1234", seen: map[string]int{}}
				e.git.clone = func(ctx context.Context, _ *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
					return wrapperspb.String("ok"), ps.handle(ctx, cloneMethod)
				}
				var mine metadata.MD
				callOpts := []grpc.CallOption{grpc.WaitForReady(true), grpc.Trailer(&mine)}
				dopts := []grpc.DialOption{grpc.WithUnaryInterceptor(interceptors.UnaryClientInterceptor(seeded()))}
				if tc.dialDefault {
					dopts = append(dopts, grpc.WithDefaultCallOptions(callOpts...))
					callOpts = nil
				}
				cc := e.client("203.0.113.7:5000", nil, dopts...)
				if err := clone(t.Context(), cc, "r", callOpts...); status.Code(err) != codes.ResourceExhausted || errors.Is(err, interceptors.ErrRefusedLocally) {
					t.Fatalf("first call: %v, want the server's ResourceExhausted", err)
				}
				if got := mine.Get(interceptors.PushbackTrailer); !slices.Equal(got, []string{"1234"}) {
					t.Errorf("the caller's own trailer has %s %q, want [1234]", interceptors.PushbackTrailer, got)
				}
				time.Sleep(1234*time.Millisecond - time.Millisecond)
				wantRefused(t, clone(t.Context(), cc, "r", callOpts...), codes.ResourceExhausted, time.Millisecond)
				time.Sleep(time.Millisecond)
				if err := clone(t.Context(), cc, "r", callOpts...); err != nil {
					t.Fatalf("after the pushback: %v", err)
				}
				if n := ps.count(cloneMethod); n != 2 {
					t.Fatalf("the server saw %d calls, want 2", n)
				}
			})
		})
	}
}

// A pushback that is not a positive number of milliseconds is ignored.
func TestClientIgnoresBadPushback(t *testing.T) {
	for _, trailer := range []string{"-5", "0", "soon", "1.5", "99999999999999999999999", "99999999999999999999999x", "-99999999999999999999999"} {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, envConfig{types: cloneTypes})
			ps := &pushbackServer{code: codes.Aborted, trailer: trailer, seen: map[string]int{}}
			e.git.clone = func(ctx context.Context, _ *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
				return wrapperspb.String("ok"), ps.handle(ctx, cloneMethod)
			}
			cc := e.client("203.0.113.7:5000", nil, grpc.WithUnaryInterceptor(interceptors.UnaryClientInterceptor(seeded(), interceptors.WithMaxPushback(time.Minute))))
			_ = clone(t.Context(), cc, "r")
			err := clone(t.Context(), cc, "r")
			if trailer == "99999999999999999999999" {
				// Too large for the parser: the longest delay, capped.
				wantRefused(t, err, codes.Aborted, time.Minute)
				return
			}
			if err != nil {
				t.Errorf("trailer %q: second call %v, want it sent", trailer, err)
			}
		})
	}
}

// A stream refused under pushback fails at NewStream; a stream's level
// reaches the server, and an accepted stream counts as accepted.
func TestStreamClientInterceptor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, envConfig{types: cloneTypes, opts: []interceptors.Option{trustInternal}})
		ps := &pushbackServer{code: codes.Unavailable, trailer: "1000", seen: map[string]int{}}
		var lv levels
		e.git.fetch = func(req *wrapperspb.StringValue, ss grpc.ServerStream) error {
			lv.record(ss.Context(), req.GetValue())
			if err := ps.handle(ss.Context(), fetchMethod); err != nil {
				return err
			}
			return ss.SendMsg(wrapperspb.String("ok"))
		}
		cc := e.client(trustedAddr, nil, grpc.WithStreamInterceptor(interceptors.StreamClientInterceptor(seeded())))
		fetch := func(ctx context.Context, repo string) error {
			s, err := cc.NewStream(ctx, &gitDesc.Streams[0], fetchMethod)
			if err != nil {
				return err
			}
			if err := s.SendMsg(wrapperspb.String(repo)); err != nil {
				return err
			}
			if err := s.CloseSend(); err != nil {
				return err
			}
			return s.RecvMsg(new(wrapperspb.StringValue))
		}
		ctx := criticality.NewContext(t.Context(), criticality.SheddablePlus)
		if err := fetch(ctx, "first"); status.Code(err) != codes.Unavailable {
			t.Fatalf("first stream: %v, want the server's Unavailable", err)
		}
		time.Sleep(999 * time.Millisecond)
		wantRefused(t, fetch(ctx, "refused"), codes.Unavailable, time.Millisecond)
		time.Sleep(time.Millisecond)
		if err := fetch(ctx, "second"); err != nil {
			t.Fatalf("after the pushback: %v", err)
		}
		if got := lv.get(); got["first"] != "sheddable_plus" || got["second"] != "sheddable_plus" || len(got) != 2 {
			t.Errorf("the server's handlers saw %v, want sheddable_plus for first and second only", got)
		}
	})
}

// A stream's outcome is read at its first RecvMsg: a message, or a clean
// end with none, is accepted; the server's overload status is not.
func TestStreamClientOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := oteltest.New()
		e := newEnv(t, envConfig{types: cloneTypes})
		e.git.fetch = func(req *wrapperspb.StringValue, ss grpc.ServerStream) error {
			switch req.GetValue() {
			case "message":
				return ss.SendMsg(wrapperspb.String("ok"))
			case "overloaded":
				return status.Error(codes.Unavailable, "go away")
			}
			return nil // no message: the client's first RecvMsg gets io.EOF
		}
		cc := e.client("203.0.113.7:5000", nil, grpc.WithStreamInterceptor(
			interceptors.StreamClientInterceptor(seeded(), interceptors.WithMeterProvider(rec.MeterProvider))))
		for _, tc := range []struct {
			repo string
			want error
		}{{"message", nil}, {"empty", io.EOF}, {"overloaded", status.Error(codes.Unavailable, "go away")}} {
			st, err := cc.NewStream(t.Context(), &gitDesc.Streams[0], fetchMethod)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.SendMsg(wrapperspb.String(tc.repo)); err != nil {
				t.Fatal(err)
			}
			if err := st.CloseSend(); err != nil {
				t.Fatal(err)
			}
			err = st.RecvMsg(new(wrapperspb.StringValue))
			if status.Code(err) != status.Code(tc.want) || (tc.want == io.EOF) != (err == io.EOF) {
				t.Fatalf("%s: RecvMsg = %v, want %v", tc.repo, err, tc.want)
			}
		}
		m, err := rec.Collect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		decision := attribute.Key("fairseat.client.decision")
		for d, want := range map[string]float64{"accepted": 2, "rejected": 1} {
			if got, _ := m.Value("fairseat.client.requests", decision.String(d)); got != want {
				t.Errorf("requests{%s} = %v, want %v\n%s", d, got, want, m)
			}
		}
	})
}

// Criticality travels: a client states sheddable to server A, whose
// handler calls server B through the client interceptor with its own
// context; B sees sheddable and queues the call two below its type. When
// A does not trust the client, nothing travels.
func TestCriticalityTwoHops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		aAddr := "10.0.0.1:7000" // how B sees A
		b := newEnv(t, envConfig{types: cloneTypes, opts: []interceptors.Option{cloneRoutes,
			interceptors.WithCriticalityTrust(interceptors.PeerIn(netip.MustParsePrefix(aAddr[:8] + "/32")))}})
		var atB levels
		gB := newGate()
		b.git.clone = func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			atB.record(ctx, req.GetValue())
			return wrapperspb.String("ok"), gB.enter(ctx, req.GetValue())
		}
		toB := b.client(aAddr, nil, grpc.WithUnaryInterceptor(interceptors.UnaryClientInterceptor()))

		a := newEnv(t, envConfig{types: cloneTypes, opts: []interceptors.Option{trustInternal}})
		a.git.clone = func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			return wrapperspb.String("ok"), clone(ctx, toB, req.GetValue())
		}
		results := make(chan result, 3)
		hold := b.client("198.51.100.1:1", nil)
		go func() { results <- result{"hold", clone(t.Context(), hold, "hold")} }()
		synctest.Wait()
		wantEntered(t, b, gB, "hold")
		for _, c := range []struct{ name, addr string }{{"trusted", trustedAddr}, {"untrusted", untrustedAddr}} {
			cc := a.client(c.addr, nil)
			go func() { results <- result{c.name, clone(withLevel(t.Context(), "sheddable"), cc, c.name)} }()
			synctest.Wait()
		}
		got := map[string]int{}
		for _, q := range b.sched.Snapshot().Queue {
			got[q.JobID] = int(q.BasePriority)
		}
		if got["trusted"] != 6 || got["untrusted"] != 8 {
			t.Errorf("priorities queued at B: %v, want trusted 6 (sheddable) and untrusted 8", got)
		}
		for _, name := range []string{"hold", "untrusted", "trusted"} {
			gB.open(name)
		}
		for range 3 {
			if r := <-results; r.err != nil {
				t.Fatalf("%s: %v", r.name, r.err)
			}
		}
		if got, want := atB.get(), map[string]string{"hold": "-", "trusted": "sheddable", "untrusted": "-"}; len(got) != 3 || got["trusted"] != want["trusted"] || got["untrusted"] != want["untrusted"] {
			t.Errorf("B's handlers saw %v, want %v", got, want)
		}
	})
}

// Metadata the caller set itself wins over the context's level.
func TestClientKeepsExplicitMetadata(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, envConfig{types: cloneTypes, opts: []interceptors.Option{trustInternal}})
		var lv levels
		e.git.clone = func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			lv.record(ctx, req.GetValue())
			return wrapperspb.String("ok"), nil
		}
		cc := e.client(trustedAddr, nil, grpc.WithUnaryInterceptor(interceptors.UnaryClientInterceptor()))
		ctx := criticality.NewContext(t.Context(), criticality.Sheddable)
		for name, ctx := range map[string]context.Context{"context": ctx, "explicit": withLevel(ctx, "critical_plus"), "none": t.Context()} {
			if err := clone(ctx, cc, name); err != nil {
				t.Fatal(err)
			}
		}
		if got := lv.get(); got["context"] != "sheddable" || got["explicit"] != "critical_plus" || got["none"] != "-" {
			t.Errorf("handlers saw %v", got)
		}
	})
}

func TestClientOptionsValidated(t *testing.T) {
	for name, opt := range map[string]interceptors.ClientOption{
		"K":           interceptors.WithThrottle(0, 0.5),
		"Window":      interceptors.WithThrottle(-time.Second, 0),
		"MaxPushback": interceptors.WithMaxPushback(-1),
	} {
		func() {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(v.(string), name) {
					t.Errorf("%s: panicked with %v, want a message naming it", name, v)
				}
			}()
			interceptors.UnaryClientInterceptor(opt)
		}()
	}
}

// The client interceptor's decisions are metrics (scope ScopeName) and
// events on the span of the call's context.
func TestClientTelemetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := oteltest.New()
		e := newEnv(t, envConfig{types: cloneTypes})
		ps := &pushbackServer{code: codes.ResourceExhausted, trailer: "500", seen: map[string]int{}}
		e.git.clone = func(ctx context.Context, _ *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			return wrapperspb.String("ok"), ps.handle(ctx, cloneMethod)
		}
		cc := e.client("203.0.113.7:5000", nil, grpc.WithUnaryInterceptor(interceptors.UnaryClientInterceptor(seeded(), interceptors.WithMeterProvider(rec.MeterProvider))))
		ctx, span := rec.TracerProvider.Tracer("test").Start(t.Context(), "request")
		_ = clone(ctx, cc, "r") // rejected, with a pushback
		_ = clone(ctx, cc, "r") // refused locally
		time.Sleep(500 * time.Millisecond)
		if err := clone(ctx, cc, "r"); err != nil {
			t.Fatal(err)
		}
		span.End()
		m, err := rec.Collect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		decision := attribute.Key("fairseat.client.decision")
		for d, want := range map[string]float64{"rejected": 1, "pushed_back": 1, "accepted": 1} {
			if got, _ := m.Value("fairseat.client.requests", decision.String(d)); got != want {
				t.Errorf("requests{%s} = %v, want %v\n%s", d, got, want, m)
			}
		}
		if got, _ := m.Value("fairseat.client.pushbacks"); got != 1 || m["fairseat.client.pushbacks"].Scope.Name != interceptors.ScopeName {
			t.Errorf("want one pushback, scope %s\n%s", interceptors.ScopeName, m)
		}
		var names []string
		for _, ev := range rec.Ended()[0].Events {
			names = append(names, ev.Name)
			if ev.Name == "fairseat.client.refused" {
				if call, _ := ev.Attr("fairseat.client.call"); call.AsString() != cloneMethod {
					t.Errorf("refusal event: call %q, want %s", call.AsString(), cloneMethod)
				}
			}
		}
		if want := []string{"fairseat.client.pushback", "fairseat.client.refused"}; !slices.Equal(names, want) {
			t.Errorf("span events %q, want %q", names, want)
		}
	})
}
