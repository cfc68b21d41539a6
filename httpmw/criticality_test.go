package httpmw

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"go.opentelemetry.io/otel/attribute"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/oteltest"
)

var trustInternal = WithCriticalityTrust(PeerIn(netip.MustParsePrefix("10.0.0.0/8")))

// critRequest is one request of a criticality scenario: a clone of repo
// from remote, stating levels.
type critRequest struct {
	repo, remote string
	levels       []string
}

// critOutcome is what a scenario observed: the order in which the queued
// requests ran, their base priorities while queued, and the level each
// handler saw ("-": none).
type critOutcome struct {
	order []string
	prio  map[string]admission.Priority
	seen  map[string]string
}

func (o critOutcome) String() string {
	return fmt.Sprintf("order %q, queued priorities %v, handler levels %v", o.order, o.prio, o.seen)
}

// critScenario holds the only seat with a clone from a third client,
// queues reqs in order, then lets them run one at a time.
func critScenario(t *testing.T, reqs []critRequest, opts ...Option) critOutcome {
	t.Helper()
	s := newScheduler(t, admission.Config{Capacity: 1}, admission.JobTypeConfig{})
	defer s.Close(t.Context())
	var mu sync.Mutex
	out := critOutcome{prio: map[string]admission.Priority{}, seen: map[string]string{}}
	gates := map[string]chan struct{}{"hold": make(chan struct{})}
	for _, r := range reqs {
		gates[r.repo] = make(chan struct{})
	}
	h := Middleware(s, opts...)(cloneMux(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		repo := r.PathValue("repo")
		lv := "-"
		if l, ok := criticality.FromContext(r.Context()); ok {
			lv = l.String()
		}
		mu.Lock()
		out.seen[repo] = lv
		if repo != "hold" {
			out.order = append(out.order, repo)
		}
		mu.Unlock()
		<-gates[repo]
	})))
	var wg sync.WaitGroup
	serve(&wg, h, "POST", "/repos/hold/clone", "198.51.100.1:1", "hold")
	synctest.Wait()
	for _, r := range reqs {
		req := httptest.NewRequest("POST", "/repos/"+r.repo+"/clone", nil)
		req.RemoteAddr = r.remote
		for _, l := range r.levels {
			req.Header.Add(criticality.Header, l)
		}
		wg.Go(func() { h.ServeHTTP(httptest.NewRecorder(), req) })
		synctest.Wait()
	}
	for _, q := range s.Snapshot().Queue {
		out.prio[q.JobID] = q.BasePriority
	}
	close(gates["hold"])
	for range reqs {
		synctest.Wait()
		mu.Lock()
		last := out.order[len(out.order)-1]
		mu.Unlock()
		close(gates[last])
	}
	wg.Wait()
	return out
}

func TestCriticalityFromTrustedCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := critScenario(t, []critRequest{
			{"shed", "10.0.0.5:1", []string{"sheddable"}},
			{"plain", "10.0.0.5:1", nil},
			{"plus", "10.0.0.5:1", []string{"CRITICAL_PLUS"}},
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

// A spoofed critical_plus from an untrusted peer gets exactly what a
// request without a level gets; from a trusted peer the same header would
// have overtaken the request queued before it.
func TestCriticalitySpoofingGainsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		scenario := func(remote string, levels ...string) critOutcome {
			return critScenario(t, []critRequest{
				{"honest", "10.0.0.5:1", nil},
				{"spoofer", remote, levels},
			}, trustInternal)
		}
		plain := scenario("203.0.113.7:1")
		spoofed := scenario("203.0.113.7:1", "critical_plus")
		if spoofed.String() != plain.String() {
			t.Errorf("spoofed critical_plus: %v\nwithout a level: %v", spoofed, plain)
		}
		if want := []string{"honest", "spoofer"}; !slices.Equal(plain.order, want) {
			t.Errorf("order %q, want %q", plain.order, want)
		}
		trusted := scenario("10.9.9.9:1", "critical_plus")
		if want := []string{"spoofer", "honest"}; !slices.Equal(trusted.order, want) {
			t.Errorf("the same header from a trusted peer: order %q, want %q (the scenario cannot tell)", trusted.order, want)
		}
	})
}

// Without WithCriticalityTrust nobody may state a level; a value that is
// not exactly one level is ignored. Neither fails the request.
func TestCriticalityIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := oteltest.New()
		got := critScenario(t, []critRequest{{"a", "10.0.0.5:1", []string{"sheddable"}}}, WithMeterProvider(rec.MeterProvider))
		if got.prio["a"] != 8 || got.seen["a"] != "-" {
			t.Errorf("without a trust option: %v, want priority 8 and no level", got)
		}
		got = critScenario(t, []critRequest{
			{"unknown", "10.0.0.5:1", []string{"urgent"}},
			{"twice", "10.0.0.5:1", []string{"sheddable", "sheddable"}},
			{"empty", "10.0.0.5:1", []string{""}},
		}, trustInternal, WithMeterProvider(rec.MeterProvider))
		m, err := rec.Collect(t.Context())
		must(t, err)
		reason := attribute.Key("fairseat.criticality.reason")
		u, _ := m.Value("fairseat.criticality.ignored", reason.String("untrusted"))
		i, _ := m.Value("fairseat.criticality.ignored", reason.String("invalid"))
		if u != 1 || i != 3 || m["fairseat.criticality.ignored"].Scope.Name != ScopeName {
			t.Errorf("ignored: %v untrusted, %v invalid; want 1 and 3, scope %s\n%s", u, i, ScopeName, m)
		}
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

// A request exempt from admission still carries its level to the handler.
func TestCriticalityExempt(t *testing.T) {
	s := newScheduler(t, admission.Config{Capacity: 1}, admission.JobTypeConfig{})
	defer s.Close(t.Context())
	var seen criticality.Level
	h := Middleware(s, trustInternal, WithExempt(func(*http.Request) bool { return true }))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = criticality.FromContext(r.Context())
	}))
	r := httptest.NewRequest("GET", "/healthz", nil)
	r.RemoteAddr = "10.0.0.5:1"
	r.Header.Set(criticality.Header, "sheddable")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if seen != criticality.Sheddable {
		t.Errorf("exempt handler saw %v, want sheddable", seen)
	}
}

func TestCriticalityOffsetsOption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := critScenario(t, []critRequest{
			{"shed", "10.0.0.5:1", []string{"sheddable"}},
			{"plus", "10.0.0.5:1", []string{"critical_plus"}},
		}, trustInternal, WithCriticalityOffsets(map[criticality.Level]admission.Priority{criticality.Sheddable: -5}))
		if want := map[string]admission.Priority{"shed": 3, "plus": 9}; !maps.Equal(got.prio, want) {
			t.Errorf("queued priorities %v, want %v", got.prio, want)
		}
	})
	defer func() {
		if v := recover(); !strings.Contains(fmt.Sprint(v), "WithCriticalityOffsets: criticality offsets: Level(-3) is not a level") {
			t.Errorf("an offset for a value that is not a level panicked with %v", v)
		}
	}()
	Middleware(nil, WithCriticalityOffsets(map[criticality.Level]admission.Priority{-3: 1}))
}

func TestTrustPredicates(t *testing.T) {
	spiffe, _ := url.Parse("spiffe://example.org/frontend")
	req := func(remote string, c *x509.Certificate, verified bool) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		if c != nil {
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
			if verified {
				r.TLS.VerifiedChains = [][]*x509.Certificate{{c}}
			}
		}
		return r
	}
	front := &x509.Certificate{URIs: []*url.URL{spiffe}, Subject: pkix.Name{CommonName: "x"}}
	batch := &x509.Certificate{Subject: pkix.Name{CommonName: "batch", Organization: []string{"acme"}}}
	other := &x509.Certificate{Subject: pkix.Name{CommonName: "other"}}
	certIn := ClientCertIn("spiffe://example.org/frontend", "CN=batch,O=acme")
	peerIn := PeerIn(netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32"))
	for _, tc := range []struct {
		name string
		pred func(*http.Request) bool
		r    *http.Request
		want bool
	}{
		{"spiffe", certIn, req("192.0.2.1:1", front, true), true},
		{"subject", certIn, req("192.0.2.1:1", batch, true), true},
		{"other subject", certIn, req("192.0.2.1:1", other, true), false},
		{"unverified", certIn, req("192.0.2.1:1", front, false), false},
		{"no TLS", certIn, req("192.0.2.1:1", nil, false), false},
		{"v4 inside", peerIn, req("10.1.2.3:1", nil, false), true},
		{"v4-mapped inside", peerIn, req("[::ffff:10.1.2.3]:1", nil, false), true},
		{"v6 inside", peerIn, req("[2001:db8::1]:1", nil, false), true},
		{"outside", peerIn, req("192.0.2.1:1", nil, false), false},
		{"not an address", peerIn, req("@unix", nil, false), false},
		{"nobody", PeerIn(), req("10.1.2.3:1", nil, false), false},
	} {
		if got := tc.pred(tc.r); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
