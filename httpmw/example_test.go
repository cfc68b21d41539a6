package httpmw_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/fairseat/fairseat/admission"
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
