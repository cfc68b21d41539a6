package httpmw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/internal/soaktest"
)

// TestSoakMiddleware runs the middleware in a real server over loopback
// TCP under many concurrent clients with deadlines, cancellations,
// disconnects mid-stream and hostile headers; handlers sleep, block, stream,
// panic into net/http's own recovery, abort, or recover themselves; halfway
// through, the server is stopped gracefully (http.Server.Shutdown) while a
// second takes over, and at the end the second is stopped under load too.
// Every request gets exactly one outcome on the server (its handler ran, or
// it was rejected, or its client left while it waited) and on the client (a
// status, or a transport error explained by a fault); handlers never exceed
// the seats or share a repository; afterwards nothing runs or is queued and
// no goroutine is left. FAIRSEAT_SOAK sets how long (see package soaktest).
func TestSoakMiddleware(t *testing.T) {
	soakMiddleware(t, nil, "httpmw (HTTP over loopback TCP)")
}

// TestSoakMiddlewareAdaptive is TestSoakMiddleware with adaptive capacity
// (soakAdaptive): the seats move under the handlers, which still never
// exceed the bound (Max, the fixed soak's capacity), and queue-delay
// shedding refuses arrivals with 503 and Retry-After.
func TestSoakMiddlewareAdaptive(t *testing.T) {
	soakMiddleware(t, soakAdaptive(), "httpmw (HTTP over loopback TCP, adaptive capacity)")
}

// soakAdaptive is the adaptive capacity of the adaptive soaks: between 1
// and the fixed soak's seats, probing every five rounds, shedding when
// the queue's least wait stays above 2 ms for 10 ms.
func soakAdaptive() *admission.AdaptiveConfig {
	return &admission.AdaptiveConfig{Min: 1, Max: httpSoakCapacity, ProbeInterval: 5,
		QueueDelayTarget: 2 * time.Millisecond, QueueDelayInterval: 10 * time.Millisecond}
}

func soakMiddleware(t *testing.T, adaptive *admission.AdaptiveConfig, name string) {
	d := soaktest.Duration(t, time.Second)
	k := newHTTPSoak(t, soaktest.Seed(t), adaptive)
	took := k.run(d)
	k.check()
	k.sum.Log(t, name, took)
	k.sum.Check(t)
	goleak.VerifyNone(t)
}

const (
	httpSoakClients  = 12
	httpSoakCapacity = 4
)

// httpSoak is one run. Its counters are atomics or guarded by mu.
type httpSoak struct {
	t    *testing.T
	seed uint64
	s    *admission.Scheduler
	sum  soaktest.Summary
	tr   *http.Transport

	url   atomic.Pointer[string] // the server clients call
	stops soaktest.Stops
	stop  atomic.Bool

	entered, finished atomic.Int64 // requests the server saw
	started, returned atomic.Int64 // requests the clients made
	panics            atomic.Int64 // panics net/http recovered (its error log)
	anomalies         atomic.Int64 // client context errors with the context live

	mu       sync.Mutex
	running  int
	byRepo   map[string]int
	statuses map[string]int64 // client outcomes by kind
}

// soakRequest is the server's record of one request: what happened to it.
type soakRequest struct {
	ran, rejected atomic.Int32
}

type soakRequestKey struct{}

func newHTTPSoak(t *testing.T, seed uint64, adaptive *admission.AdaptiveConfig) *httpSoak {
	k := &httpSoak{t: t, seed: seed, byRepo: map[string]int{}, statuses: map[string]int64{}}
	s, err := admission.New(admission.Config{Capacity: httpSoakCapacity, MaxQueue: 40,
		DefaultKey: admission.KeyPolicy{MaxQueued: 6, MaxInFlight: 2}, Adaptive: adaptive})
	must(t, err)
	must(t, s.RegisterType("clone", admission.JobTypeConfig{Priority: 8, ConflictGroup: "git", MaxWait: 40 * time.Millisecond, DefaultCost: time.Millisecond}))
	must(t, s.RegisterType("default", admission.JobTypeConfig{Priority: 8, MaxWait: 40 * time.Millisecond, DefaultCost: time.Millisecond}))
	k.s = s
	k.tr = &http.Transport{MaxIdleConnsPerHost: httpSoakClients}
	return k
}

// handler builds the server's handler: the accounting wrapper, the
// middleware and the routes.
func (k *httpSoak) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /repos/{repo}/clone", Tag("clone", PathValue("repo"), k.work(true)))
	mux.Handle("GET /repos/{repo}/stream", Tag("clone", PathValue("repo"), k.work(true)))
	mux.Handle("GET /any", k.work(false))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { k.mark(r, false) })
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	mw := Middleware(k.s,
		WithKeyFunc(FirstOf(TrustedHeader("X-Tenant", loopback), ClientIP(nil, 64))),
		WithDefaultJobType("default", nil),
		WithExempt(func(r *http.Request) bool { return r.URL.Path == "/healthz" }),
		WithRejectHandler(func(w http.ResponseWriter, r *http.Request, rej Rejection) {
			k.mark(r, true)
			WriteRejection(w, r, rej)
		}))(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.entered.Add(1)
		rec := &soakRequest{}
		r = r.WithContext(context.WithValue(r.Context(), soakRequestKey{}, rec))
		defer func() {
			k.finished.Add(1)
			ran, rej := rec.ran.Load(), rec.rejected.Load()
			if ran+rej > 1 || (ran+rej == 0 && r.Context().Err() == nil) {
				k.sum.Lostf(k.t, "%s %s: handler ran %d times, rejected %d times", r.Method, r.URL.Path, ran, rej)
			}
		}()
		mw.ServeHTTP(w, r)
	})
}

func (k *httpSoak) mark(r *http.Request, rejected bool) {
	rec, _ := r.Context().Value(soakRequestKey{}).(*soakRequest)
	switch {
	case rec == nil:
		k.sum.Violationf(k.t, "request without its record")
	case rejected:
		rec.rejected.Add(1)
	default:
		rec.ran.Add(1)
	}
}

// work is a handler whose behaviour the client chooses (X-Behave). A
// handler of a tagged route holds a seat and its repository.
func (k *httpSoak) work(tagged bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mark(r, false)
		repo := r.PathValue("repo")
		k.enter(repo, tagged)
		defer k.leave(repo, tagged)
		switch r.Header.Get("X-Behave") {
		case "slow": // blocks until the client gives up, or a while
			select {
			case <-r.Context().Done():
			case <-time.After(20 * time.Millisecond):
			}
		case "panic": // into net/http's recovery: the connection is closed
			panic("soak: handler panicked")
		case "abort":
			panic(http.ErrAbortHandler)
		case "recover": // the application's own recovery
			func() {
				defer func() {
					if recover() != nil {
						http.Error(w, "recovered", http.StatusInternalServerError)
					}
				}()
				panic("soak: handler panicked")
			}()
			return
		case "stream":
			for i := 0; i < 10 && r.Context().Err() == nil; i++ {
				_, _ = w.Write([]byte(strings.Repeat("x", 1024)))
				_ = http.NewResponseController(w).Flush()
				time.Sleep(500 * time.Microsecond)
			}
		default:
			time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
		}
		_, _ = io.WriteString(w, "ok")
	})
}

// enter and leave count the handlers running; a tagged handler holds its
// seat from before enter to after leave, so the counts never exceed what
// the scheduler allows.
func (k *httpSoak) enter(repo string, tagged bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !tagged {
		return
	}
	k.running++
	k.byRepo[repo]++
	if k.running > httpSoakCapacity || k.byRepo[repo] > 1 {
		k.sum.Violationf(k.t, "%d tagged handlers run (capacity %d), %d on %s", k.running, httpSoakCapacity, k.byRepo[repo], repo)
	}
}

func (k *httpSoak) leave(repo string, tagged bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if tagged {
		k.running--
		k.byRepo[repo]--
	}
}

// serve starts a server on a fresh loopback listener.
func (k *httpSoak) serve(done *sync.WaitGroup) *http.Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(k.t, err)
	srv := &http.Server{Handler: k.handler(), ErrorLog: log.New(panicCounter{&k.panics}, "", 0)}
	done.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			k.sum.Violationf(k.t, "Serve: %v", err)
		}
	})
	u := "http://" + ln.Addr().String()
	k.url.Store(&u)
	return srv
}

// panicCounter counts the panics net/http's error log reports.
type panicCounter struct{ n *atomic.Int64 }

func (p panicCounter) Write(b []byte) (int, error) {
	if strings.Contains(string(b), "panic serving") {
		p.n.Add(1)
	}
	return len(b), nil
}

// shutdown stops srv gracefully while clients keep calling.
func (k *httpSoak) shutdown(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		k.sum.Violationf(k.t, "Shutdown: %v", err)
	}
}

func (k *httpSoak) run(d time.Duration) time.Duration {
	start := time.Now()
	var serving, clients sync.WaitGroup
	k.stops.Handover(&k.sum, d, func() func() {
		srv := k.serve(&serving)
		return func() { k.shutdown(srv) }
	}, func() {
		for i := range httpSoakClients {
			clients.Go(func() {
				rng := rand.New(rand.NewPCG(k.seed, uint64(i)))
				for !k.stop.Load() {
					k.call(rng)
				}
			})
		}
	})
	k.stop.Store(true)
	clients.Wait()
	serving.Wait()
	if err := k.s.Close(context.Background()); err != nil {
		k.sum.Violationf(k.t, "Close: %v", err)
	}
	k.tr.CloseIdleConnections()
	return time.Since(start)
}

// call makes one request with random faults and reports its outcome.
func (k *httpSoak) call(rng *rand.Rand) {
	k.started.Add(1)
	defer k.returned.Add(1)
	k.sum.Operations.Add(1)
	stops := k.stops.Seq()
	fault := false
	repo := fmt.Sprintf("r%d", rng.IntN(8))
	method, path := "POST", "/repos/"+repo+"/clone"
	switch n := rng.IntN(20); {
	case n < 4:
		method, path = "GET", "/repos/"+repo+"/stream"
	case n < 9:
		method, path = "GET", "/any"
	case n < 11:
		method, path = "GET", "/healthz"
	}
	behave := "ok"
	if n := rng.IntN(20); n < 8 {
		behave = []string{"slow", "panic", "abort", "recover", "stream", "stream", "stream", "stream"}[n]
	}
	if behave == "panic" || behave == "abort" || behave == "slow" || behave == "recover" {
		fault = true
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	switch rng.IntN(8) {
	case 0:
		ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(30_000))*time.Microsecond)
		fault = true
	case 1:
		ctx, cancel = context.WithCancel(ctx)
		tm := time.AfterFunc(time.Duration(rng.IntN(10_000))*time.Microsecond, cancel)
		defer tm.Stop()
		fault = true
	}
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, *k.url.Load()+path, nil)
	must(k.t, err)
	req.Header.Set("X-Behave", behave)
	req.Header.Set("X-Tenant", fmt.Sprintf("tenant-%d", rng.IntN(3)))
	if rng.IntN(5) == 0 { // hostile headers: a spoofed chain, a huge tenant, many entries
		req.Header.Set("X-Forwarded-For", "1.2.3.4, 10.0.0.1, garbage")
		req.Header.Set("X-Tenant", strings.Repeat("t", 4000+rng.IntN(4000)))
		for i := range 100 {
			req.Header.Add("X-Junk", fmt.Sprint(i))
		}
	}
	disconnect := behave == "stream" && rng.IntN(2) == 0
	if fault || disconnect {
		k.sum.Faults.Add(1)
	}
	resp, err := (&http.Client{Transport: k.tr}).Do(req)
	if err != nil {
		switch {
		case fault || k.stops.Explains(stops):
			k.count("transport error")
		case (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) && ctx.Err() == nil:
			// The long run met this a few times in 10^5 requests: a context
			// error from net/http's client for a context that has not ended
			// (on a reused connection, under load). It is still one outcome;
			// it is counted apart and logged, since no server can cause it.
			k.count("client context error, context live")
			if n := k.anomalies.Add(1); n <= 3 {
				k.t.Logf("%s %s: %v with the request's context live", method, path, err)
			}
		default:
			k.sum.Violationf(k.t, "%s %s: transport error with no fault injected: %v", method, path, err)
		}
		return
	}
	if disconnect { // read a little and hang up mid-stream
		_, _ = io.ReadFull(resp.Body, make([]byte, 100))
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	resp.Body.Close()
	k.count(fmt.Sprint(resp.StatusCode))
	want := map[int]bool{200: true, 429: true, 503: true}
	if path == "/healthz" {
		want = map[int]bool{200: true}
	} else if behave == "recover" {
		want[500] = true
	}
	if !want[resp.StatusCode] {
		k.sum.Violationf(k.t, "%s %s (%s): status %d", method, path, behave, resp.StatusCode)
	}
	if (resp.StatusCode == 429 || resp.StatusCode == 503) && resp.Header.Get("Retry-After") == "" {
		k.sum.Violationf(k.t, "%d without Retry-After", resp.StatusCode)
	}
}

func (k *httpSoak) count(kind string) {
	k.mu.Lock()
	k.statuses[kind]++
	k.mu.Unlock()
}

// check runs once clients and servers have stopped and the scheduler is
// closed.
func (k *httpSoak) check() {
	t := k.t
	if a, b := k.started.Load(), k.returned.Load(); a != b {
		k.sum.Lostf(t, "clients made %d requests, %d returned", a, b)
	}
	if a, b := k.entered.Load(), k.finished.Load(); a != b {
		k.sum.Lostf(t, "the server saw %d requests, finished %d", a, b)
	}
	snap := k.s.Snapshot()
	if snap.InUse != 0 || snap.Queued != 0 || k.running != 0 {
		k.sum.Lostf(t, "after the stop: %d seats in use, %d queued, %d handlers counted running", snap.InUse, snap.Queued, k.running)
	}
	c := snap.Counters
	if ended := c.Ended(); c.Submitted != ended {
		k.sum.Lostf(t, "counters: %d submitted, %d ended (%+v)", c.Submitted, ended, c)
	}
	k.mu.Lock()
	t.Logf("client outcomes %v; server saw %d requests; net/http recovered %d panics; goroutines %d\ncounters %+v",
		k.statuses, k.entered.Load(), k.panics.Load(), runtime.NumGoroutine(), c)
	k.mu.Unlock()
}
