package interceptors_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/interceptors"
	"github.com/fairseat/fairseat/internal/oteltest"
)

// Callers in 10.0.0.0/8 may state a criticality; others may not.
var (
	trustedAddr   = "10.0.0.5:4000"
	untrustedAddr = "203.0.113.7:5000"
	trustInternal = interceptors.WithCriticalityTrust(interceptors.PeerIn(netip.MustParsePrefix("10.0.0.0/8")))
)

// withLevel returns ctx with outgoing metadata stating levels (none: ctx).
// (One append of all the pairs: appending them one by one copies the list
// each time, and 10,000 levels took seconds.)
func withLevel(ctx context.Context, levels ...string) context.Context {
	if len(levels) == 0 {
		return ctx
	}
	kv := make([]string, 0, 2*len(levels))
	for _, l := range levels {
		kv = append(kv, criticality.MetadataKey, l)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// levels records the level each handler found in its context, by
// repository ("-" when there was none).
type levels struct {
	mu   sync.Mutex
	seen map[string]string
}

func (l *levels) record(ctx context.Context, repo string) {
	s := "-"
	if lv, ok := criticality.FromContext(ctx); ok {
		s = lv.String()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]string{}
	}
	l.seen[repo] = s
}

func (l *levels) get() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.seen)
}

// critCall is one call of a criticality scenario: repo from a client at
// addr stating levels.
type critCall struct {
	repo, addr string
	levels     []string
}

// critOutcome is what a scenario observed: the order in which the queued
// calls ran, their base priorities while queued, and the level each
// handler saw.
type critOutcome struct {
	order []string
	prio  map[string]admission.Priority
	seen  map[string]string
}

func (o critOutcome) String() string {
	return fmt.Sprintf("order %q, queued priorities %v, handler levels %v", o.order, o.prio, o.seen)
}

// critScenario holds the only seat (capacity 1) with a call from a third
// client, queues calls in order, then lets them run one at a time.
func critScenario(t *testing.T, calls []critCall, opts ...interceptors.Option) critOutcome {
	t.Helper()
	g := newGate()
	var lv levels
	e := newEnv(t, envConfig{types: cloneTypes, opts: append([]interceptors.Option{cloneRoutes}, opts...)})
	e.git.clone = func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		lv.record(ctx, req.GetValue())
		return wrapperspb.String("ok"), g.enter(ctx, req.GetValue())
	}
	results := make(chan result, len(calls)+1)
	holder := e.client("198.51.100.1:1", nil)
	go func() { results <- result{"hold", clone(t.Context(), holder, "hold")} }()
	synctest.Wait()
	wantEntered(t, e, g, "hold")
	for _, c := range calls {
		cc := e.client(c.addr, nil)
		go func() { results <- result{c.repo, clone(withLevel(t.Context(), c.levels...), cc, c.repo)} }()
		synctest.Wait()
	}
	out := critOutcome{prio: map[string]admission.Priority{}}
	for _, q := range e.sched.Snapshot().Queue {
		out.prio[q.JobID] = q.BasePriority
	}
	open := "hold"
	for range calls {
		g.open(open)
		synctest.Wait()
		wantResult(t, results, open, codes.OK)
		next := g.drain()
		if len(next) != 1 {
			t.Fatalf("after %s: %q entered, want one\n%s", open, next, describe(e.sched))
		}
		open = next[0]
		out.order = append(out.order, open)
	}
	g.open(open)
	synctest.Wait()
	wantResult(t, results, open, codes.OK)
	out.seen = lv.get()
	return out
}

// A trusted caller's level orders its call within the route's type and
// reaches the handler's context; the default offsets put sheddable two
// below the type (8) and critical_plus one above.
func TestCriticalityFromTrustedCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := critScenario(t, []critCall{
			{"shed", trustedAddr, []string{"sheddable"}},
			{"plain", trustedAddr, nil},
			{"plus", trustedAddr, []string{"critical_plus"}},
		}, trustInternal)
		want := critOutcome{
			order: []string{"plus", "plain", "shed"},
			prio:  map[string]admission.Priority{"shed": 6, "plain": 8, "plus": 9},
			seen:  map[string]string{"hold": "-", "shed": "sheddable", "plain": "-", "plus": "critical_plus"},
		}
		if got.String() != want.String() {
			t.Fatalf("got  %v\nwant %v", got, want)
		}
	})
}

// A spoofed critical_plus from an untrusted peer gets exactly what a call
// without a level gets; the same call from a trusted peer would have
// overtaken the call queued before it, so the scenario can tell.
func TestCriticalitySpoofingGainsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		scenario := func(spoofAddr string, levels ...string) critOutcome {
			return critScenario(t, []critCall{
				{"honest", trustedAddr, nil},
				{"spoofer", spoofAddr, levels},
			}, trustInternal)
		}
		plain := scenario(untrustedAddr)
		spoofed := scenario(untrustedAddr, "critical_plus")
		if spoofed.String() != plain.String() {
			t.Errorf("spoofed critical_plus: %v\nwithout a level: %v", spoofed, plain)
		}
		if want := []string{"honest", "spoofer"}; !slices.Equal(plain.order, want) {
			t.Errorf("order %q, want %q", plain.order, want)
		}
		trusted := scenario("10.9.9.9:1", "critical_plus")
		if want := []string{"spoofer", "honest"}; !slices.Equal(trusted.order, want) {
			t.Errorf("the same level from a trusted peer: order %q, want %q (the scenario cannot tell)", trusted.order, want)
		}
	})
}

// Without WithCriticalityTrust nobody may state a level; a trusted caller's
// value that is not exactly one level is ignored too. Neither fails the
// call.
func TestCriticalityIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := oteltest.New()
		got := critScenario(t, []critCall{{"a", trustedAddr, []string{"sheddable"}}}, interceptors.WithMeterProvider(rec.MeterProvider))
		if got.prio["a"] != 8 || got.seen["a"] != "-" {
			t.Errorf("without a trust option: %v, want priority 8 and no level", got)
		}
		got = critScenario(t, []critCall{
			{"unknown", trustedAddr, []string{"urgent"}},
			{"twice", trustedAddr, []string{"sheddable", "sheddable"}},
			{"empty", trustedAddr, []string{""}},
		}, trustInternal, interceptors.WithMeterProvider(rec.MeterProvider))
		wantIgnored(t, rec, 1, 3)
		want := critOutcome{
			order: []string{"unknown", "twice", "empty"},
			prio:  map[string]admission.Priority{"unknown": 8, "twice": 8, "empty": 8},
			seen:  map[string]string{"hold": "-", "unknown": "-", "twice": "-", "empty": "-"},
		}
		if got.String() != want.String() {
			t.Fatalf("got  %v\nwant %v", got, want)
		}
	})
}

// WithCriticalityOffsets moves the levels by other amounts (clone is the
// only type, so no other tier bounds them).
func TestCriticalityOffsets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := critScenario(t, []critCall{
			{"shed", trustedAddr, []string{"sheddable"}},
			{"plus", trustedAddr, []string{"critical_plus"}},
		}, trustInternal, interceptors.WithCriticalityOffsets(map[criticality.Level]admission.Priority{
			criticality.Sheddable: -5, criticality.CriticalPlus: 1000,
		}))
		if want := map[string]admission.Priority{"shed": 3, "plus": 1008}; !maps.Equal(got.prio, want) {
			t.Errorf("queued priorities %v, want %v", got.prio, want)
		}
	})
	defer func() {
		if v := recover(); !strings.Contains(fmt.Sprint(v), "WithCriticalityOffsets: criticality offsets: Level(7) is not a level") {
			t.Errorf("an offset for a value that is not a level panicked with %v", v)
		}
	}()
	interceptors.UnaryServerInterceptor(newBareScheduler(t), interceptors.WithCriticalityOffsets(map[criticality.Level]admission.Priority{7: 1}))
}

// wantIgnored checks the counts of fairseat.criticality.ignored.
func wantIgnored(t *testing.T, rec *oteltest.Recorder, untrusted, invalid float64) {
	t.Helper()
	m, err := rec.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	reason := attribute.Key("fairseat.criticality.reason")
	u, _ := m.Value("fairseat.criticality.ignored", reason.String("untrusted"))
	i, _ := m.Value("fairseat.criticality.ignored", reason.String("invalid"))
	if u != untrusted || i != invalid || (u+i > 0 && m["fairseat.criticality.ignored"].Scope.Name != interceptors.ScopeName) {
		t.Errorf("ignored: %v untrusted, %v invalid; want %v and %v, scope %s\n%s", u, i, untrusted, invalid, interceptors.ScopeName, m)
	}
}

func newBareScheduler(t *testing.T) *admission.Scheduler {
	t.Helper()
	s, err := admission.New(admission.Config{Capacity: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// A stream's handler finds the level in its stream's context, and a level
// an earlier interceptor put in the context wins over the metadata.
func TestCriticalityStreamAndEarlierInterceptor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lv levels
		setPlus := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if req.(*wrapperspb.StringValue).GetValue() == "auth" {
				ctx = criticality.NewContext(ctx, criticality.CriticalPlus)
			}
			return h(ctx, req)
		}
		e := newEnv(t, envConfig{types: cloneTypes, outer: []grpc.UnaryServerInterceptor{setPlus}, opts: []interceptors.Option{cloneRoutes, trustInternal,
			interceptors.WithRoutes(interceptors.Routes{fetchMethod: {Type: "clone", Stream: interceptors.FirstMessage, JobID: interceptors.Field("value")}})}})
		e.git.clone = func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			lv.record(ctx, req.GetValue())
			return wrapperspb.String("ok"), nil
		}
		e.git.fetch = func(req *wrapperspb.StringValue, ss grpc.ServerStream) error {
			lv.record(ss.Context(), req.GetValue())
			return ss.SendMsg(wrapperspb.String("ok"))
		}
		cc := e.client(trustedAddr, nil)
		if err := clone(withLevel(t.Context(), "sheddable"), cc, "auth"); err != nil {
			t.Fatal(err)
		}
		s, err := cc.NewStream(withLevel(t.Context(), "sheddable_plus"), &gitDesc.Streams[0], fetchMethod)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SendMsg(wrapperspb.String("stream")); err != nil {
			t.Fatal(err)
		}
		if err := s.CloseSend(); err != nil {
			t.Fatal(err)
		}
		if err := s.RecvMsg(new(wrapperspb.StringValue)); err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"auth": "critical_plus", "stream": "sheddable_plus"}; !maps.Equal(lv.get(), want) {
			t.Errorf("handlers saw %v, want %v", lv.get(), want)
		}
	})
}

func TestClientCertIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, envConfig{types: cloneTypes, mtls: true})
		spiffe := e.ca.spiffeCert(t, "spiffe://example.org/frontend")
		subject := e.ca.subjectCert(t, "batch")
		other := e.ca.spiffeCert(t, "spiffe://example.org/other")
		trusted := interceptors.ClientCertIn("spiffe://example.org/frontend", "CN=batch,O=fairseat")
		var mu sync.Mutex
		got := map[string]bool{}
		e.git.clone = func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			mu.Lock()
			got[req.GetValue()] = trusted(ctx)
			mu.Unlock()
			return wrapperspb.String("ok"), nil
		}
		for name, cert := range map[string]*tls.Certificate{"spiffe": &spiffe, "subject": &subject, "other": &other, "none": nil} {
			if err := clone(t.Context(), e.client("192.0.2.1:1", cert), name); err != nil {
				t.Fatal(err)
			}
		}
		if want := map[string]bool{"spiffe": true, "subject": true, "other": false, "none": false}; !maps.Equal(got, want) {
			t.Errorf("trusted %v, want %v", got, want)
		}
	})
}
