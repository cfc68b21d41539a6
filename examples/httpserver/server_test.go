package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testWork stands in for git: a clone of "hold" blocks until release is
// closed, and every repack is reported on repacked.
type testWork struct {
	started  chan string
	release  chan struct{}
	repacked chan string
}

func (w *testWork) do(ctx context.Context, op, repo string) error {
	switch {
	case repo == "hold":
		w.started <- op
		select {
		case <-w.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	case op == "repack":
		w.repacked <- repo
	}
	return nil
}

// startServer runs the example until the test ends and returns its API
// and admin base URLs. The cleanup checks that run shut down cleanly.
func startServer(t *testing.T, cfg config) (api, admin string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	type addrs struct{ api, admin string }
	listening := make(chan addrs, 1)
	cfg.Listening = func(a, b string) { listening <- addrs{"http://" + a, "http://" + b} }
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	select {
	case a := <-listening:
		return a.api, a.admin
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
		return "", ""
	}
}

func TestServer(t *testing.T) {
	// A safety net only: nothing below waits for time to pass.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := &testWork{started: make(chan string), release: make(chan struct{}), repacked: make(chan string, 1)}
	api, admin := startServer(t, config{
		Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		Capacity: 1, MaxQueued: 1,
		TrustedProxies:  []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		ShutdownTimeout: 10 * time.Second,
		Work:            w.do,
		Logger:          slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	// Admitted requests: a clone, a streamed fetch, a queued repack, and a
	// health check (exempt from admission).
	if code, body := do(ctx, t, c, "GET", api+"/clone/github.com/golang/go", ""); code != 200 || body != "cloned github.com/golang/go\n" {
		t.Fatalf("clone: %d %q", code, body)
	}
	if code, body := do(ctx, t, c, "GET", api+"/fetch/github.com/golang/go", ""); code != 200 || strings.Count(body, "\n") != 3 {
		t.Fatalf("fetch: %d %q, want 3 lines", code, body)
	}
	if code, body := do(ctx, t, c, "POST", api+"/repack/github.com/golang/go", ""); code != http.StatusAccepted {
		t.Fatalf("repack: %d %q", code, body)
	}
	if repo := <-w.repacked; repo != "github.com/golang/go" {
		t.Fatalf("repacked %q", repo)
	}
	if code, _ := do(ctx, t, c, "GET", api+"/healthz", ""); code != 200 {
		t.Fatalf("healthz: %d", code)
	}

	// Tenant "ci" (named in X-Tenant-ID, believed from loopback) holds the
	// one seat and has one clone waiting: its next clone is refused.
	codes := make(chan int, 2)
	go func() { code, _ := do(ctx, t, c, "GET", api+"/clone/hold", "ci"); codes <- code }()
	<-w.started
	go func() { code, _ := do(ctx, t, c, "GET", api+"/clone/other", "ci"); codes <- code }()
	waitQueued(ctx, t, c, admin, 1)
	resp := request(ctx, t, c, "GET", api+"/clone/third", "ci")
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third clone of tenant ci: %s, Retry-After %q; want 429 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
	}
	close(w.release)
	for range 2 {
		if code := <-codes; code != 200 {
			t.Errorf("clone of tenant ci: %d", code)
		}
	}

	// /metrics has otelhttp's HTTP metrics. (The scheduler records no
	// metrics of its own yet; when it does, they appear here too.)
	if code, metrics := do(ctx, t, c, "GET", admin+"/metrics", ""); code != 200 || !strings.Contains(metrics, "http_server_") ||
		!strings.Contains(metrics, `fairseat_requests_total{fairseat_result="rejected_queue_full"`) {
		t.Errorf("/metrics: %d, no http_server_ metric or no fairseat rejection count:\n%s", code, metrics)
	}

	snap := debugSnapshot(ctx, t, c, admin)
	n := snap.Counters
	if n.Admitted != 5 || n.RejectedQueueFull != 1 || n.Exempt != 1 {
		t.Errorf("counters: admitted %d, rejected_queue_full %d, exempt %d; want 5, 1, 1", n.Admitted, n.RejectedQueueFull, n.Exempt)
	}
	if snap.Capacity != 1 || len(snap.Types) != 3 {
		t.Errorf("debug snapshot: capacity %d, %d types; want 1, 3", snap.Capacity, len(snap.Types))
	}
}

// snapshot is the part of /debug/admission?format=json the test reads.
type snapshot struct {
	Capacity int `json:"capacity"`
	Queued   int `json:"queued"`
	Types    []struct {
		Type string `json:"type"`
	} `json:"types"`
	Counters struct {
		Admitted          uint64 `json:"admitted"`
		RejectedQueueFull uint64 `json:"rejected_queue_full"`
		Exempt            uint64 `json:"exempt"`
	} `json:"counters"`
}

func debugSnapshot(ctx context.Context, t *testing.T, c *http.Client, admin string) snapshot {
	t.Helper()
	var s snapshot
	code, body := do(ctx, t, c, "GET", admin+"/debug/admission?format=json", "")
	if err := json.Unmarshal([]byte(body), &s); code != 200 || err != nil {
		t.Fatalf("/debug/admission: %d, %v\n%s", code, err, body)
	}
	return s
}

// waitQueued polls the debug page until n requests wait for a seat.
func waitQueued(ctx context.Context, t *testing.T, c *http.Client, admin string, n int) {
	t.Helper()
	for debugSnapshot(ctx, t, c, admin).Queued != n {
		select {
		case <-ctx.Done():
			t.Fatalf("never %d queued", n)
		case <-time.After(time.Millisecond):
		}
	}
}

// request sends a request, as tenant if not "". Safe to call from any
// goroutine: it reports errors with t.Error.
func request(ctx context.Context, t *testing.T, c *http.Client, method, url, tenant string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		t.Error(err)
		return &http.Response{Body: http.NoBody}
	}
	if tenant != "" {
		req.Header.Set("X-Tenant-ID", tenant)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Error(err)
		return &http.Response{Body: http.NoBody}
	}
	return resp
}

func do(ctx context.Context, t *testing.T, c *http.Client, method, url, tenant string) (int, string) {
	t.Helper()
	resp := request(ctx, t, c, method, url, tenant)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Error(err)
	}
	return resp.StatusCode, string(body)
}
