package gitcache

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/fairseat/fairseat/admission"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLoopbackOnly(t *testing.T) {
	h := LoopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for addr, want := range map[string]int{"127.0.0.1:5000": 200, "[::1]:5000": 200, "192.0.2.7:5000": 403, "garbage": 403} {
		r := httptest.NewRequest("GET", "/debug/admission", nil)
		r.RemoteAddr = addr
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Errorf("from %s: %d, want %d", addr, rec.Code, want)
		}
	}
}

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes(" 10.0.0.0/8, ,::1/128")
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ParsePrefixes = %v, %v; want %v", got, err, want)
	}
	if _, err := ParsePrefixes("10.0.0.0/33"); err == nil {
		t.Error("ParsePrefixes accepted a /33")
	}
}

// TestNewSchedulerCostFile: with a cost file, what one scheduler learned is
// what the next one starts with; a damaged file starts cold.
func TestNewSchedulerCostFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "costs")
	tel, err := NewTelemetry("test")
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	logs := &strings.Builder{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	learned := func(s *admission.Scheduler) int {
		for _, ts := range s.Snapshot().Types {
			if ts.Type == Clone {
				return ts.LearnedCosts
			}
		}
		t.Fatal("no clone type")
		return 0
	}

	s, err := NewScheduler(2, 2, path, tel, logger)
	if err != nil {
		t.Fatal(err)
	}
	for _, repo := range []string{"github.com/golang/go", "github.com/torvalds/linux"} {
		if err := s.RunSync(t.Context(), Clone, repo, "client", func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	s, err = NewScheduler(2, 2, path, tel, logger)
	if err != nil {
		t.Fatal(err)
	}
	if n := learned(s); n != 2 {
		t.Errorf("the restarted scheduler starts with %d learned clone costs, want 2", n)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(path, []byte("not a cost file"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = NewScheduler(2, 2, path, tel, logger)
	if err != nil {
		t.Fatal(err)
	}
	if n := learned(s); n != 0 || !strings.Contains(logs.String(), "cost store load failed") {
		t.Errorf("from a damaged file: %d learned costs, log %q; want a cold start and a warning", n, logs)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}
