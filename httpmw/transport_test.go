package httpmw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/grpc/test/bufconn"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/capacitytest"
	"github.com/fairseat/fairseat/internal/oteltest"
)

// hosts are httptest servers on bufconn listeners, so that they run inside
// a synctest bubble, by the host name clients use for them.
type hosts map[string]*bufconn.Listener

// serve starts an httptest server for h as host name; h sees every request
// coming from remote. t.Cleanup stops it.
func (hs hosts) serve(t *testing.T, name, remote string, h http.Handler) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = remote
		h.ServeHTTP(w, r)
	}))
	lis := bufconn.Listen(1 << 16)
	srv.Listener = lis
	srv.Start()
	hs[name] = lis
	t.Cleanup(srv.Close)
}

// client returns a client whose Transport(opts...) dials the hosts.
func (hs hosts) client(t *testing.T, opts ...TransportOption) *http.Client {
	base := &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		lis, ok := hs[host]
		if !ok {
			return nil, fmt.Errorf("no host %q", host)
		}
		return lis.DialContext(ctx)
	}}
	t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: Transport(base, append([]TransportOption{withRand(rand.New(rand.NewPCG(1, 2)).Float64)}, opts...)...)}
}

// get sends a request and returns its status (0 on error) and error; the
// body is read and closed.
func get(ctx context.Context, c *http.Client, method, url string, hdr ...string) (int, error) {
	r, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return 0, err
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(r)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// A host that accepts 5 of the 50 requests a second its client makes sees
// about K = 2 times what it accepts once the client's window (10 s) has
// filled; the rest fail locally with a 503-like *RefusedError. When it
// recovers, the traffic comes back within two windows.
func TestTransportThrottlesOverloadedHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hs := hosts{}
		b := capacitytest.New(5)
		hs.serve(t, "api.test", "192.0.2.1:1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !b.Admit(time.Now()) {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		c := hs.client(t, WithThrottle(10*time.Second, 2))
		capacitytest.Overload(t, b, func() bool {
			code, err := get(t.Context(), c, "GET", "http://api.test/items")
			var rej *RefusedError
			switch {
			case errors.As(err, &rej) && errors.Is(err, ErrRefusedLocally):
				if rej.Status != http.StatusServiceUnavailable || !rej.Throttled || rej.Host != "api.test" {
					t.Fatalf("local refusal %+v, want a throttled 503 for api.test", rej)
				}
				return true
			case err != nil || (code != http.StatusOK && code != http.StatusServiceUnavailable):
				t.Fatalf("request: %d, %v", code, err)
			}
			return false
		})
	})
}

// closeRecorder is a request body that records whether it was closed.
type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// After a Retry-After no request of that kind reaches the host until the
// delay has passed, to the millisecond of fake time; other kinds of
// request go on. A refused request's body is closed.
func TestTransportHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		after  func(now time.Time) string
		want   time.Duration
	}{
		{"seconds", http.StatusTooManyRequests, func(time.Time) string { return "2" }, 2 * time.Second},
		{"date", http.StatusServiceUnavailable, func(now time.Time) string { return now.Add(3 * time.Second).UTC().Format(http.TimeFormat) }, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				seen := map[string]int{}
				hs := hosts{}
				hs.serve(t, "api.test", "192.0.2.1:1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					defer mu.Unlock()
					seen[r.URL.Path]++
					if r.URL.Path == "/busy" && seen["/busy"] == 1 {
						w.Header().Set("Retry-After", tc.after(time.Now()))
						w.WriteHeader(tc.status)
					}
				}))
				c := hs.client(t)
				count := func(path string) int { mu.Lock(); defer mu.Unlock(); return seen[path] }
				if code, err := get(t.Context(), c, "GET", "http://api.test/busy"); code != tc.status || err != nil {
					t.Fatalf("first request: %d, %v", code, err)
				}
				time.Sleep(tc.want - time.Millisecond)
				body := &closeRecorder{Reader: strings.NewReader("x")}
				r, _ := http.NewRequestWithContext(t.Context(), "GET", "http://api.test/busy", body)
				// The RoundTripper itself, not http.Client (which closes the
				// body of a failed request too): closing it is the
				// RoundTripper's contract.
				_, err := c.Transport.RoundTrip(r)
				var rej *RefusedError
				if !errors.As(err, &rej) || !errors.Is(err, ErrRefusedLocally) || rej.Status != tc.status || rej.RetryAfter != time.Millisecond || rej.Throttled {
					t.Fatalf("during the delay: %v, want a local refusal with %d and 1ms left", err, tc.status)
				}
				if msg := err.Error(); !strings.Contains(msg, "refused locally") || !strings.Contains(msg, "api.test") || !strings.Contains(msg, "Retry-After") {
					t.Errorf("the error reads %q, want it to name the local refusal, the host and Retry-After", msg)
				}
				if !body.closed {
					t.Error("the refused request's body was not closed")
				}
				if code, err := get(t.Context(), c, "GET", "http://api.test/other"); code != http.StatusOK || err != nil {
					t.Errorf("another path was held back: %d, %v", code, err)
				}
				if n := count("/busy"); n != 1 {
					t.Fatalf("the host saw %d requests during the delay, want only the first", n)
				}
				time.Sleep(time.Millisecond)
				if code, err := get(t.Context(), c, "GET", "http://api.test/busy"); code != http.StatusOK || err != nil {
					t.Fatalf("after the delay: %d, %v", code, err)
				}
			})
		})
	}
}

// Transport's decisions are metrics (scope ScopeName) and events on the
// span of the request's context.
func TestTransportTelemetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := oteltest.New()
		hs := hosts{}
		n := 0
		hs.serve(t, "api.test", "192.0.2.1:1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n++; n == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
			}
		}))
		c := hs.client(t, WithMeterProvider(rec.MeterProvider))
		ctx, span := rec.TracerProvider.Tracer("test").Start(t.Context(), "request")
		for range 2 {
			_, _ = get(ctx, c, "GET", "http://api.test/x")
		}
		time.Sleep(time.Second)
		if code, err := get(ctx, c, "GET", "http://api.test/x"); code != http.StatusOK || err != nil {
			t.Fatalf("after the delay: %d, %v", code, err)
		}
		span.End()
		m, err := rec.Collect(ctx)
		must(t, err)
		decision := attribute.Key("fairseat.client.decision")
		for d, want := range map[string]float64{"rejected": 1, "pushed_back": 1, "accepted": 1} {
			if got, _ := m.Value("fairseat.client.requests", decision.String(d)); got != want {
				t.Errorf("requests{%s} = %v, want %v\n%s", d, got, want, m)
			}
		}
		if got, _ := m.Value("fairseat.client.pushbacks"); got != 1 || m["fairseat.client.pushbacks"].Scope.Name != ScopeName {
			t.Errorf("want one pushback, scope %s\n%s", ScopeName, m)
		}
		var names []string
		for _, ev := range rec.Ended()[0].Events {
			names = append(names, ev.Name)
			if host, _ := ev.Attr("server.address"); host.AsString() != "api.test" {
				t.Errorf("event %s: server.address %q, want api.test", ev.Name, host.AsString())
			}
		}
		if want := []string{"fairseat.client.pushback", "fairseat.client.refused"}; fmt.Sprint(names) != fmt.Sprint(want) {
			t.Errorf("span events %q, want %q", names, want)
		}
	})
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"0":                             0,
		"5":                             5 * time.Second,
		" 7 ":                           7 * time.Second,
		"-1":                            0,
		"1.5":                           0,
		"soon":                          0,
		"99999999999999999999999":       1<<63 - 1,
		"99999999999999999999999x":      0, // malformed, however long its digits
		"+99999999999999999999999":      0, // delay-seconds is digits only
		"9223372036":                    9223372036 * time.Second,
		"Thu, 01 Jan 2026 00:00:09 GMT": 9 * time.Second,
		"Wed, 31 Dec 2025 23:59:00 GMT": 0,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

// Criticality travels over HTTP: a client states sheddable to host A,
// whose handler calls host B through Transport with its request's
// context; B queues it two below its type. From an untrusted client
// nothing travels. A request that states a level itself keeps it.
func TestTransportCriticalityTwoHops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hs := hosts{}
		sched := newScheduler(t, admission.Config{Capacity: 1}, admission.JobTypeConfig{})
		defer sched.Close(t.Context())
		gates := map[string]chan struct{}{"hold": make(chan struct{}), "trusted": make(chan struct{}), "untrusted": make(chan struct{}), "explicit": make(chan struct{})}
		var mu sync.Mutex
		atB := map[string]string{}
		b := Middleware(sched, WithCriticalityTrust(PeerIn(netip.MustParsePrefix("10.0.0.1/32"))))(cloneMux(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			l, ok := criticality.FromContext(r.Context())
			mu.Lock()
			atB[r.PathValue("repo")] = fmt.Sprint(l, ok)
			mu.Unlock()
			<-gates[r.PathValue("repo")]
		})))
		hs.serve(t, "b.test", "10.0.0.1:7000", b)
		toB := hs.client(t)
		a := Middleware(sched, trustInternal)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var hdr []string
			if r.URL.Path == "/explicit" {
				hdr = []string{criticality.Header, "critical_plus"}
			}
			code, err := get(r.Context(), toB, "POST", "http://b.test/repos"+r.URL.Path+"/clone", hdr...)
			if err != nil {
				code = http.StatusBadGateway
			}
			w.WriteHeader(code)
		}))
		hs.serve(t, "a.test", "10.0.0.5:1", a)
		hs.serve(t, "a-untrusted.test", "203.0.113.7:1", a)
		c := hs.client(t)
		var wg sync.WaitGroup
		codes := make(chan int, 4)
		call := func(url string, hdr ...string) {
			wg.Go(func() {
				code, err := get(t.Context(), c, "POST", url, hdr...)
				if err != nil {
					t.Error(err)
				}
				codes <- code
			})
			synctest.Wait()
		}
		call("http://b.test/repos/hold/clone")
		call("http://a.test/trusted", criticality.Header, "sheddable")
		call("http://a-untrusted.test/untrusted", criticality.Header, "sheddable")
		call("http://a.test/explicit", criticality.Header, "sheddable")
		got := map[string]admission.Priority{}
		for _, q := range sched.Snapshot().Queue {
			got[q.JobID] = q.BasePriority
		}
		if want := map[string]admission.Priority{"trusted": 6, "untrusted": 8, "explicit": 9}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("priorities queued at B: %v, want %v", got, want)
		}
		for _, g := range gates {
			close(g)
		}
		wg.Wait()
		close(codes)
		for code := range codes {
			if code != http.StatusOK {
				t.Errorf("a request ended with %d", code)
			}
		}
		if want := map[string]string{"hold": "critical false", "trusted": "sheddable true", "untrusted": "critical false", "explicit": "critical_plus true"}; fmt.Sprint(atB) != fmt.Sprint(want) {
			t.Errorf("B's handlers saw %v, want %v", atB, want)
		}
	})
}

// rtFunc is a RoundTripper of a function.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Errors of the next RoundTripper count as not accepted, unless the
// request's context ended (the caller gave up).
func TestTransportErrors(t *testing.T) {
	down := errors.New("connection refused")
	next := rtFunc(func(r *http.Request) (*http.Response, error) {
		if err := r.Context().Err(); err != nil {
			return nil, err
		}
		return nil, down
	})
	draws := 0.0
	rt := Transport(next, withRand(func() float64 { return draws }))
	req := func(ctx context.Context) error {
		r, _ := http.NewRequestWithContext(ctx, "GET", "http://down.test/", nil)
		_, err := rt.RoundTrip(r)
		return err
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for range 10 {
		if err := req(cancelled); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled request: %v", err)
		}
	}
	// Ten requests, ten accepts: p stays 0 even for a draw of 0.
	if err := req(context.Background()); !errors.Is(err, down) {
		t.Fatalf("first failure: %v", err)
	}
	draws = 0.5
	for i := range 40 {
		if err := req(context.Background()); errors.Is(err, ErrRefusedLocally) {
			var rej *RefusedError
			if !errors.As(err, &rej) || rej.Status != http.StatusServiceUnavailable || !strings.Contains(err.Error(), "503 Service Unavailable") {
				t.Fatalf("refusal %v, want a 503-like *RefusedError", err)
			}
			// At request i, R = 11+i and A = 10: p = (i-9)/(i+12) passes
			// the draw, 0.5, first at i = 31.
			if i != 31 {
				t.Fatalf("refused at request %d, want 31", i)
			}
			return
		}
	}
	t.Fatal("an unreachable host was never throttled")
}

func TestTransportOptionsValidated(t *testing.T) {
	for name, opt := range map[string]TransportOption{
		"K":           WithThrottle(0, 0.5),
		"Window":      WithThrottle(time.Nanosecond, 0),
		"MaxPushback": WithMaxPushback(-1),
		"MaxBackends": WithMaxBackends(-1),
	} {
		func() {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), name) {
					t.Errorf("%s: panicked with %v, want a message naming it", name, v)
				}
			}()
			Transport(nil, opt)
		}()
	}
}
