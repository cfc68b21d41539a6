package admission

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// chromiumPath finds a Chromium (or Chrome) binary, or skips the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium binary in PATH: install Debian's chromium package (apt-get install chromium) to render the debug page in a browser")
	return ""
}

// TestDebugPageInBrowser loads the debug page in headless Chromium and checks
// that its script fetched ?format=json and rendered it. The request it looks
// for is queued only when the first JSON request arrives, after the page
// itself was served, so only the script can have put its job ID in the DOM.
//
// It uses a real server and real time (Chromium is a separate process), so
// it does not run in synctest; a context bounds it. With
// ADMISSION_DEBUG_SCREENSHOT=file.png it also saves a screenshot.
func TestDebugPageInBrowser(t *testing.T) {
	ctx, chromium := browserTest(t)

	s, err := New(Config{Capacity: 2, Keys: map[string]KeyPolicy{"tenant-a": {Weight: 2, MinSeats: 1}}})
	must(t, err)
	must(t, s.RegisterType("clone", JobTypeConfig{DefaultCost: 20 * time.Second, Priority: PriorityForeground, ConflictGroup: "git", MaxWait: time.Minute}))
	must(t, s.RegisterType("repack", JobTypeConfig{DefaultCost: time.Minute, Priority: PriorityBackground, ConflictGroup: "git", MaxConcurrency: 1}))
	var held []*Permit
	for _, r := range []Request{
		{Type: "clone", JobID: "github.com/torvalds/linux", FairnessKey: "tenant-a"},
		{Type: "repack", JobID: "github.com/golang/go"},
	} {
		p, err := s.Acquire(ctx, r)
		must(t, err)
		held = append(held, p)
	}
	waitCtx, stopWaiters := context.WithCancel(ctx)
	var waiters []<-chan result
	queue := func(r Request) {
		n := s.Snapshot().Queued
		waiters = append(waiters, acquireAsync(waitCtx, s, r))
		for s.Snapshot().Queued == n && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
	}
	queue(Request{Type: "clone", JobID: "github.com/torvalds/linux", FairnessKey: "203.0.113.7"})
	queue(Request{Type: "repack", JobID: "github.com/golang/tools"})

	const (
		lateJobID = "late-job-rendered-by-script"
		lateKey   = `<script>alert(1)</script>`
	)
	var once sync.Once
	handler := DebugHandler(s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("format") == "json" {
			once.Do(func() { queue(Request{Type: "clone", JobID: lateJobID, FairnessKey: lateKey}) })
		}
		handler.ServeHTTP(w, r)
	}))
	defer func() {
		srv.Close()
		stopWaiters()
		for _, w := range waiters {
			<-w
		}
		for _, p := range held {
			p.Release()
		}
		must(t, s.Close(context.Background()))
	}()

	run := func(extra ...string) []byte {
		return runChromium(ctx, t, chromium, srv.URL+"/debug/admission", extra...)
	}
	dom := string(run("--dump-dom"))

	for _, want := range []string{
		lateJobID,                 // rendered by the script from the JSON
		`data-state="live"`,       // the script's status line
		`&lt;script&gt;alert(1)`,  // the hostile key, written as text
		"github.com/golang/tools", // rendered on the server, then again by the script
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q:\n%s", want, dom)
		}
	}
	if strings.Count(dom, "<script") != 1 {
		t.Errorf("the hostile key became markup:\n%s", dom)
	}
	if path := os.Getenv("ADMISSION_DEBUG_SCREENSHOT"); path != "" {
		run("--screenshot="+path, "--window-size=1200,900", "--hide-scrollbars")
		t.Logf("screenshot saved to %s", path)
	}
}

// browserTest skips t under -short or without a chromium, and returns a
// context that bounds the test and the chromium binary.
func browserTest(t *testing.T) (context.Context, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a browser")
	}
	chromium := chromiumPath(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx, chromium
}

// runChromium runs headless chromium on url with the extra flags, and
// returns its output; it fails t if chromium fails or ctx ends first.
func runChromium(ctx context.Context, t *testing.T, chromium, url string, extra ...string) []byte {
	t.Helper()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=3000"}
	cmd := exec.CommandContext(ctx, chromium, append(append(args, extra...), url)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("chromium did not finish in time; stderr:\n%s", stderr.String())
		}
		t.Fatalf("chromium: %v; stderr:\n%s", err, stderr.String())
	}
	return out
}

// TestDebugPageAdaptiveInBrowser: the adaptive capacity line, as the
// page's script renders it from the JSON, says where a restored limit
// came from.
func TestDebugPageAdaptiveInBrowser(t *testing.T) {
	ctx, chromium := browserTest(t)
	s, err := New(Config{Adaptive: &AdaptiveConfig{Min: 2, Max: 64, Initial: 4}}, WithCostStore(&capStore{limit: 24}, time.Hour))
	must(t, err)
	defer s.Close(context.Background())
	srv := httptest.NewServer(DebugHandler(s))
	defer srv.Close()
	dom := string(runChromium(ctx, t, chromium, srv.URL+"/debug/admission", "--dump-dom"))
	for _, want := range []string{`data-state="live"`, "Adaptive capacity: limit 24.0 in [2, 64]", "Started at 24 seats, the limit loaded from the cost store."} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q:\n%s", want, dom)
		}
	}
}
