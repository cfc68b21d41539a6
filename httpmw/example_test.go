package httpmw_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/httpmw"
)

// A git cache's HTTP API: clones wait for a seat and never run together on
// one repository; the health check never waits. Behind a load balancer at
// 10.0.0.0/8, the client address comes from X-Forwarded-For.
func Example() {
	sched, err := admission.New(admission.Config{Capacity: 8})
	if err != nil {
		panic(err)
	}
	defer sched.Close(context.Background())
	_ = sched.RegisterType("clone", admission.JobTypeConfig{
		DefaultCost:   10 * time.Second,
		ConflictGroup: "git",
		Priority:      admission.PriorityForeground,
	})

	mux := http.NewServeMux()
	mux.Handle("POST /repos/{repo}/clone", httpmw.Tag("clone", httpmw.PathValue("repo"),
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "cloned %s\n", r.PathValue("repo"))
		})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })

	lb := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	handler := httpmw.Middleware(sched,
		httpmw.WithKeyFunc(httpmw.FirstOf(httpmw.ClientCert(), httpmw.ClientIP(lb, 64))),
		httpmw.WithExempt(func(r *http.Request) bool { return r.URL.Path == "/healthz" }),
	)(mux)

	for _, target := range []string{"/repos/linux/clone", "/healthz"} {
		method := "POST"
		if target == "/healthz" {
			method = "GET"
		}
		r := httptest.NewRequest(method, target, nil)
		r.RemoteAddr = "10.0.0.7:44312"
		r.Header.Set("X-Forwarded-For", "203.0.113.50")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, r)
		fmt.Print(rec.Code, " ", rec.Body.String())
	}
	c := sched.Snapshot().Counters
	fmt.Println("admitted:", c.Admitted, "exempt:", c.Exempt)
	// Output:
	// 200 cloned linux
	// 200 ok
	// admitted: 1 exempt: 1
}

// Client and server wired together: the client's Transport states the
// context's criticality, which the server believes from loopback peers; a
// 503 with Retry-After holds back the same request until the delay has
// passed — the Transport refuses it itself, 503-like.
func ExampleTransport() {
	sched, err := admission.New(admission.Config{Capacity: 8})
	if err != nil {
		panic(err)
	}
	defer sched.Close(context.Background())
	_ = sched.RegisterType("report", admission.JobTypeConfig{Priority: admission.PriorityForeground})
	mux := http.NewServeMux()
	mux.Handle("GET /report", httpmw.Tag("report", nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		level, _ := criticality.FromContext(r.Context())
		fmt.Println("server: a", level, "report")
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusServiceUnavailable)
	})))
	srv := httptest.NewServer(httpmw.Middleware(sched,
		httpmw.WithCriticalityTrust(httpmw.PeerIn(netip.MustParsePrefix("127.0.0.0/8"))))(mux))
	defer srv.Close()

	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: httpmw.Transport(base)}
	ctx := criticality.NewContext(context.Background(), criticality.SheddablePlus)
	for range 2 {
		r, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/report", nil)
		resp, err := client.Do(r)
		if err != nil {
			var refused *httpmw.RefusedError
			fmt.Println("client:", errors.Is(err, httpmw.ErrRefusedLocally), errors.As(err, &refused) && refused.Status == 503)
			continue
		}
		resp.Body.Close()
		fmt.Println("client:", resp.Status)
	}
	// Output:
	// server: a sheddable_plus report
	// client: 503 Service Unavailable
	// client: true true
}
