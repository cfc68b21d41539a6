package httpmw

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairseat/fairseat/admission"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// newScheduler has "clone" (conflict group git, priority 8) and "default".
func newScheduler(t testing.TB, cfg admission.Config, clone admission.JobTypeConfig) *admission.Scheduler {
	t.Helper()
	s, err := admission.New(cfg)
	must(t, err)
	clone.ConflictGroup, clone.Priority = "git", 8
	must(t, s.RegisterType("clone", clone))
	must(t, s.RegisterType("default", admission.JobTypeConfig{Priority: 8}))
	return s
}

// journal records which requests ran, when, and lets tests hold them.
type journal struct {
	mu     sync.Mutex
	starts []string
	t0     time.Time
	hold   time.Duration
}

func (j *journal) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.mu.Lock()
		j.starts = append(j.starts, r.Header.Get("X-Name")+"@"+time.Since(j.t0).String())
		j.mu.Unlock()
		time.Sleep(j.hold)
		w.WriteHeader(http.StatusNoContent)
	})
}

func (j *journal) log() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.starts...)
}

// serve runs h for a request in a goroutine and returns its recorder.
func serve(wg *sync.WaitGroup, h http.Handler, method, target, remote, name string, hdr ...string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(method, target, nil)
	r.RemoteAddr = remote
	r.Header.Set("X-Name", name)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	wg.Go(func() { h.ServeHTTP(rec, r) })
	return rec
}

func cloneMux(h http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("POST /repos/{repo}/clone", Tag("clone", PathValue("repo"), h))
	mux.Handle("GET /healthz", h)
	return mux
}

// TestConflictsBetweenRequests: two clones of the same {repo} never run
// together; a clone of another repository runs alongside.
func TestConflictsBetweenRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(t, admission.Config{Capacity: 4}, admission.JobTypeConfig{})
		j := &journal{t0: time.Now(), hold: time.Second}
		h := Middleware(s)(cloneMux(j.handler()))
		var wg sync.WaitGroup
		serve(&wg, h, "POST", "/repos/linux/clone", "192.0.2.1:1", "a")
		synctest.Wait()
		serve(&wg, h, "POST", "/repos/linux/clone", "192.0.2.2:1", "b")
		serve(&wg, h, "POST", "/repos/git/clone", "192.0.2.3:1", "c")
		wg.Wait()
		got := strings.Join(j.log(), " ")
		if got != "a@0s c@0s b@1s" {
			t.Fatalf("starts = %s, want a and c at once, b after a", got)
		}
		must(t, s.Close(t.Context()))
	})
}

// TestFairnessBetweenClients: a client with five queued clones does not
// delay a second client beyond the next free seat.
func TestFairnessBetweenClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(t, admission.Config{Capacity: 1}, admission.JobTypeConfig{DefaultCost: time.Second})
		j := &journal{t0: time.Now(), hold: time.Second}
		h := Middleware(s)(cloneMux(j.handler()))
		var wg sync.WaitGroup
		for i := range 5 {
			serve(&wg, h, "POST", "/repos/r"+string(rune('0'+i))+"/clone", "192.0.2.1:1", "heavy")
			synctest.Wait()
		}
		serve(&wg, h, "POST", "/repos/x/clone", "[2001:db8::1]:1", "light")
		wg.Wait()
		log := j.log()
		if len(log) != 6 || log[1] != "light@1s" {
			t.Fatalf("starts = %v, want the light client second, at 1s", log)
		}
		must(t, s.Close(t.Context()))
	})
}

// TestRejections: every rejection path answers with its status, a
// Retry-After where a retry can help, and a body.
func TestRejections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(t, admission.Config{Capacity: 1, DefaultKey: admission.KeyPolicy{MaxQueued: 1}},
			admission.JobTypeConfig{DefaultCost: 3 * time.Second, MaxWait: 5 * time.Second})
		j := &journal{t0: time.Now(), hold: 10 * time.Second}
		mux := cloneMux(j.handler())
		mux.Handle("POST /bogus/{repo}", Tag("no-such-type", PathValue("repo"), j.handler()))
		mux.Handle("POST /noid", Tag("clone", PathValue("repo"), j.handler()))
		h := Middleware(s)(mux)
		var wg sync.WaitGroup
		serve(&wg, h, "POST", "/repos/a/clone", "192.0.2.1:1", "holder")
		synctest.Wait()
		waiter := serve(&wg, h, "POST", "/repos/b/clone", "192.0.2.1:1", "waiter")
		synctest.Wait()
		full := serve(&wg, h, "POST", "/repos/c/clone", "192.0.2.1:1", "full", "Accept", "application/json")
		bogus := serve(&wg, h, "POST", "/bogus/x", "192.0.2.9:1", "bogus")
		noid := serve(&wg, h, "POST", "/noid", "192.0.2.9:1", "noid")
		badAddr := serve(&wg, h, "POST", "/repos/d/clone", "@", "unix")
		synctest.Wait()
		for _, tc := range []struct {
			name       string
			rec        *httptest.ResponseRecorder
			status     int
			retryAfter string
			body       string
		}{
			// The running clone's 3s estimate, plus the caller's one queued 3s clone on one seat.
			{"caller's queue full", full, 429, "6", `"retry_after_seconds":6`},
			{"unknown job type", bogus, 500, "", "Internal Server Error"},
			{"no job ID", noid, 400, "", "path value {repo}"},
			{"no caller identity", badAddr, 400, "", "cannot identify the caller"},
		} {
			if tc.rec.Code != tc.status || tc.rec.Header().Get("Retry-After") != tc.retryAfter || !strings.Contains(tc.rec.Body.String(), tc.body) {
				t.Errorf("%s: %d Retry-After %q body %q; want %d, %q, containing %q",
					tc.name, tc.rec.Code, tc.rec.Header().Get("Retry-After"), tc.rec.Body.String(), tc.status, tc.retryAfter, tc.body)
			}
		}
		var body map[string]any
		if err := json.Unmarshal(full.Body.Bytes(), &body); err != nil || full.Header().Get("Content-Type") != "application/json" {
			t.Errorf("JSON body %q: %v", full.Body.String(), err)
		}
		// The waiter times out after MaxWait: 503. The holder has overrun its
		// 3s estimate and nothing else is queued, so the hint is the minimum, 1s.
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if waiter.Code != 503 || waiter.Header().Get("Retry-After") != "1" || !strings.Contains(waiter.Body.String(), "wait timeout") {
			t.Errorf("wait timeout: %d %q %q", waiter.Code, waiter.Header().Get("Retry-After"), waiter.Body.String())
		}
		wg.Wait()
		must(t, s.Close(t.Context()))
		closed := serve(&wg, h, "POST", "/repos/a/clone", "192.0.2.1:1", "late")
		wg.Wait()
		if closed.Code != 503 || closed.Header().Get("Retry-After") == "" || !strings.Contains(closed.Body.String(), "closed") {
			t.Errorf("after Close: %d %q %q", closed.Code, closed.Header().Get("Retry-After"), closed.Body.String())
		}
	})
}

// writeSpy records whether anything was written.
type writeSpy struct {
	http.ResponseWriter
	wrote bool
}

func (w *writeSpy) WriteHeader(code int)        { w.wrote = true; w.ResponseWriter.WriteHeader(code) }
func (w *writeSpy) Write(b []byte) (int, error) { w.wrote = true; return w.ResponseWriter.Write(b) }

// TestClientGoneWhileQueued: a request whose client disconnects while it
// waits leaves the queue and nothing is written.
func TestClientGoneWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(t, admission.Config{Capacity: 1}, admission.JobTypeConfig{})
		j := &journal{t0: time.Now(), hold: time.Minute}
		h := Middleware(s)(cloneMux(j.handler()))
		var wg sync.WaitGroup
		serve(&wg, h, "POST", "/repos/a/clone", "192.0.2.1:1", "holder")
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		spy := &writeSpy{ResponseWriter: httptest.NewRecorder()}
		r := httptest.NewRequestWithContext(ctx, "POST", "/repos/b/clone", nil)
		r.RemoteAddr = "192.0.2.2:1"
		wg.Go(func() { h.ServeHTTP(spy, r) })
		synctest.Wait()
		if q := s.Snapshot().Queued; q != 1 {
			t.Fatalf("queued = %d", q)
		}
		cancel()
		synctest.Wait()
		if spy.wrote {
			t.Error("wrote a response to a client that went away")
		}
		if c := s.Snapshot().Counters; c.Cancelled != 1 || s.Snapshot().Queued != 0 {
			t.Errorf("counters %+v", c)
		}
		wg.Wait()
		must(t, s.Close(t.Context()))
	})
}

// TestEmptyKeyRefused: a KeyFunc that yields "" does not put the caller on
// the background jobs' key.
func TestEmptyKeyRefused(t *testing.T) {
	s := newScheduler(t, admission.Config{Capacity: 1}, admission.JobTypeConfig{})
	h := Middleware(s, WithKeyFunc(func(*http.Request) (string, error) { return "", nil }))(cloneMux(http.NotFoundHandler()))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/repos/a/clone", nil))
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "no fairness key") {
		t.Fatalf("%d %q", rec.Code, rec.Body.String())
	}
	must(t, s.Close(t.Context()))
}

func TestTagWithoutMiddleware(t *testing.T) {
	rec := httptest.NewRecorder()
	Tag("clone", nil, http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), "not behind httpmw.Middleware") {
		t.Fatalf("%d %q", rec.Code, rec.Body.String())
	}
}

// TestDefaultJobTypeAndExempt: with a default type, untagged routes are
// admitted under it, tagged routes once under their own type, and exempt
// requests pass even when every seat is taken.
func TestDefaultJobTypeAndExempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(t, admission.Config{Capacity: 1}, admission.JobTypeConfig{})
		j := &journal{t0: time.Now(), hold: time.Second}
		mux := cloneMux(j.handler())
		mux.Handle("GET /other", j.handler())
		h := Middleware(s,
			WithDefaultJobType("default", nil),
			WithExempt(func(r *http.Request) bool { return r.URL.Path == "/healthz" }),
		)(mux)
		var wg sync.WaitGroup
		serve(&wg, h, "POST", "/repos/a/clone", "192.0.2.1:1", "clone")
		synctest.Wait()
		other := serve(&wg, h, "GET", "/other", "192.0.2.2:1", "other")
		health := serve(&wg, h, "GET", "/healthz", "192.0.2.3:1", "health")
		synctest.Wait()
		snap := s.Snapshot()
		if snap.InUse != 1 || snap.Queued != 1 || snap.Queue[0].Type != "default" || snap.Counters.Exempt != 1 {
			t.Fatalf("in use %d, queue %+v, counters %+v", snap.InUse, snap.Queue, snap.Counters)
		}
		wg.Wait()
		if other.Code != 204 || health.Code != 204 {
			t.Fatalf("other %d health %d", other.Code, health.Code)
		}
		if c := s.Snapshot().Counters; c.Admitted != 2 {
			t.Fatalf("admitted %d, want 2 (the tagged route once, the untagged once)", c.Admitted)
		}
		must(t, s.Close(t.Context()))
	})
}

// TestDefaultJobTypeLookAhead: the default type applies where the
// router's look-ahead sees no Tag. A Tag hidden inside another wrapper is
// not seen: its request is admitted once, under the default type, and the
// Tag then runs its handler without admitting again. A wrapped handler
// that is not a router cannot be asked: every request counts as tagged,
// so only Tags admit and the rest pass through.
func TestDefaultJobTypeLookAhead(t *testing.T) {
	s := newScheduler(t, admission.Config{Capacity: 4}, admission.JobTypeConfig{})
	// runningAs records the job types running while a handler runs.
	var runningAs []string
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, ts := range s.Snapshot().Types {
			if ts.Running > 0 {
				runningAs = append(runningAs, string(ts.Type))
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
	hidden := http.NewServeMux()
	tag := Tag("clone", PathValue("repo"), record)
	hidden.Handle("POST /repos/{repo}/clone", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tag.ServeHTTP(w, r) }))
	notRouter := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/plain" {
			record.ServeHTTP(w, r)
			return
		}
		cloneMux(record).ServeHTTP(w, r)
	})
	for _, tc := range []struct {
		name         string
		next         http.Handler
		method, path string
		want         []string // job types running in the handler
	}{
		{"a hidden Tag", hidden, "POST", "/repos/a/clone", []string{"default"}},
		{"not a router, a Tag", notRouter, "POST", "/repos/a/clone", []string{"clone"}},
		{"not a router, no Tag", notRouter, "GET", "/plain", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runningAs = nil
			before := s.Snapshot().Counters.Admitted
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(tc.method, tc.path, nil)
			r.RemoteAddr = "192.0.2.1:1"
			Middleware(s, WithDefaultJobType("default", nil))(tc.next).ServeHTTP(rec, r)
			if rec.Code != http.StatusNoContent || !slices.Equal(runningAs, tc.want) {
				t.Errorf("status %d, running as %v; want 204 running as %v", rec.Code, runningAs, tc.want)
			}
			if got := s.Snapshot().Counters.Admitted - before; got != uint64(len(tc.want)) {
				t.Errorf("admitted %d times, want %d", got, len(tc.want))
			}
		})
	}
	must(t, s.Close(t.Context()))
}

// TestResponseControllerThroughMiddleware: the handler gets the server's own
// ResponseWriter, so flushing works.
func TestResponseControllerThroughMiddleware(t *testing.T) {
	s := newScheduler(t, admission.Config{Capacity: 1}, admission.JobTypeConfig{})
	h := Middleware(s)(cloneMux(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("part"))
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("Flush through the middleware: %v", err)
		}
	})))
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/repos/a/clone", nil)
	h.ServeHTTP(rec, r)
	if !rec.Flushed || rec.Body.String() != "part" {
		t.Fatalf("flushed %v body %q", rec.Flushed, rec.Body.String())
	}
	must(t, s.Close(t.Context()))
}

func TestAcceptsJSON(t *testing.T) {
	for accept, want := range map[string]bool{
		"application/json":                     true,
		"text/html, application/json;q=0.5":    true,
		"application/json;q=0":                 false,
		"text/plain":                           false,
		"":                                     false,
		"application/json;q=bogus, text/plain": true,
		";;;":                                  false,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept", accept)
		if got := acceptsJSON(r); got != want {
			t.Errorf("acceptsJSON(%q) = %v", accept, got)
		}
	}
}

func TestRejectionMapping(t *testing.T) {
	perKey := &admission.RejectedError{Reason: admission.ErrQueueFull, PerKey: true, RetryAfter: 1500 * time.Millisecond}
	server := &admission.RejectedError{Reason: admission.ErrWaitTimeout, RetryAfter: 2 * time.Second}
	for _, tc := range []struct {
		err    error
		status int
	}{
		{perKey, 429},
		{server, 503},
		{&admission.RejectedError{Reason: admission.ErrOverloaded}, 503}, // queue-delay shedding: the server's overload
		{errors.Join(admission.ErrUnknownJobType), 500},
		{errors.New("other"), 503},
	} {
		if got := RejectionFor(tc.err); got.Status != tc.status {
			t.Errorf("RejectionFor(%v) = %d, want %d", tc.err, got.Status, tc.status)
		}
	}
	rec := httptest.NewRecorder()
	WriteRejection(rec, httptest.NewRequest("GET", "/", nil), rejection(perKey))
	if rec.Header().Get("Retry-After") != "2" {
		t.Errorf("Retry-After for 1.5s = %q, want 2 (rounded up)", rec.Header().Get("Retry-After"))
	}
}
