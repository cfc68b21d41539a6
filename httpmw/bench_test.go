package httpmw

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/internal/paired"
)

// BenchmarkMiddleware compares a tagged route behind the middleware with the
// bare handler, serving one request at a time (low load: every request is
// admitted at once), so the difference is the middleware's own cost: key
// derivation, job ID, Acquire and Release.
func BenchmarkMiddleware(b *testing.B) {
	s, bare, fair := benchHandlers(b)
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"handler=bare", bare}, {"handler=fairseat", fair}} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest("POST", "/repos/linux/clone", nil)
			r.RemoteAddr = "203.0.113.7:5555"
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				bc.h.ServeHTTP(w, r)
			}
		})
	}
	must(b, s.Close(b.Context()))
}

// BenchmarkMiddlewareLoopback is the same comparison through a real server
// and client over loopback with keep-alive: the overhead a deployment sees.
func BenchmarkMiddlewareLoopback(b *testing.B) {
	s, bare, fair := benchHandlers(b)
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"handler=bare", bare}, {"handler=fairseat", fair}} {
		b.Run(bc.name, func(b *testing.B) {
			srv := httptest.NewServer(bc.h)
			defer srv.Close()
			client := srv.Client()
			url := srv.URL + "/repos/linux/clone"
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Post(url, "text/plain", nil)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
			client.CloseIdleConnections()
		})
	}
	must(b, s.Close(b.Context()))
}

// BenchmarkMiddlewarePaired is BenchmarkMiddlewareLoopback measured so
// that the machine's drift cannot read as the middleware's cost: five
// servers of the same route, called in turn in one loop (paired.Loop).
// Besides bare and fairseat: aa, a second bare server (the control: what
// the statistics read when there is nothing to find); ctx, the bare route
// behind only what the middleware does to the request before admission (a
// request copy with a context value); acquire, the bare route holding a
// seat of a scheduler of its own for a fixed request (Acquire and Release
// alone). It reports bare's median call, and every other variant's median
// and mean over bare's, in ns.
func BenchmarkMiddlewarePaired(b *testing.B) {
	s, bare, fair := benchHandlers(b)
	ctxOnly := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bare.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), stateKey{}, &state{})))
	})
	own := benchScheduler(b)
	acquireOnly := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := own.Acquire(r.Context(), admission.Request{Type: "clone", JobID: "linux", FairnessKey: "203.0.113.7"})
		if err != nil {
			b.Error(err)
			return
		}
		defer p.Release()
		bare.ServeHTTP(w, r)
	})
	// Each variant gets a server of its own; aa serves the bare route
	// again.
	variants := []struct {
		name string
		h    http.Handler
	}{{"bare", bare}, {"aa", bare}, {"ctx", ctxOnly}, {"acquire", acquireOnly}, {"fairseat", fair}}
	calls := make([]func(), len(variants))
	for i, v := range variants {
		srv := httptest.NewServer(v.h)
		defer srv.Close()
		client, url := srv.Client(), srv.URL+"/repos/linux/clone"
		calls[i] = func() {
			resp, err := client.Post(url, "text/plain", nil)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	mean, median := paired.Loop(b, calls)
	b.ReportMetric(median[0], "p50-ns-bare/call")
	for i, v := range variants[1:] {
		b.ReportMetric(median[i+1]-median[0], "p50-"+v.name+"-ns-over-bare")
		b.ReportMetric(mean[i+1]-mean[0], "mean-"+v.name+"-ns-over-bare")
	}
	must(b, s.Close(b.Context()))
	must(b, own.Close(b.Context()))
}

// benchHandlers builds the two servers both benchmarks compare: the bare
// route, and the same route tagged behind the middleware (64 seats, so every
// request is admitted at once).
func benchHandlers(b *testing.B) (*admission.Scheduler, http.Handler, http.Handler) {
	s := benchScheduler(b)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	bare := http.NewServeMux()
	bare.Handle("POST /repos/{repo}/clone", ok)
	tagged := http.NewServeMux()
	tagged.Handle("POST /repos/{repo}/clone", Tag("clone", PathValue("repo"), ok))
	return s, bare, Middleware(s)(tagged)
}

// BenchmarkTransport measures Transport alone: a GET through it to a
// RoundTripper that answers 204 at once (transport=fairseat), against
// that RoundTripper called directly (transport=bare). Every request is
// accepted: the plain case the transport must not slow.
func BenchmarkTransport(b *testing.B) {
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r}, nil
	})
	for _, bc := range []struct {
		name string
		rt   http.RoundTripper
	}{{"transport=bare", next}, {"transport=fairseat", Transport(next)}} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "http://git.example/repos/linux", nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := bc.rt.RoundTrip(r)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

// roundTripFunc is a RoundTripper from a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// benchScheduler is the benchmarks' scheduler: 64 seats, so that every
// request is admitted at once, and the clone type.
func benchScheduler(b *testing.B) *admission.Scheduler {
	s, err := admission.New(admission.Config{Capacity: 64})
	must(b, err)
	must(b, s.RegisterType("clone", admission.JobTypeConfig{ConflictGroup: "git", Priority: 64}))
	return s
}
