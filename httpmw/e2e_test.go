package httpmw

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fairseat/fairseat/admission"
)

// waitFor polls cond until it holds; it sequences a test against real
// network I/O, where fake time cannot reach, and asserts nothing about time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestEndToEnd runs the middleware in a real server with a real client: a
// second clone of the same repository waits for the first, a third request
// from the same caller is turned away with 429 and Retry-After.
func TestEndToEnd(t *testing.T) {
	s := newScheduler(t, admission.Config{Capacity: 2, DefaultKey: admission.KeyPolicy{MaxQueued: 1}}, admission.JobTypeConfig{DefaultCost: 2 * time.Second})
	release := make(chan struct{})
	started := make(chan string, 4)
	mux := cloneMux(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- r.PathValue("repo")
		<-release
		_, _ = io.WriteString(w, "cloned "+r.PathValue("repo"))
	}))
	srv := httptest.NewServer(Middleware(s)(mux))
	defer srv.Close()

	type reply struct {
		code int
		body string
		hint string
	}
	post := func(repo string) <-chan reply {
		ch := make(chan reply, 1)
		go func() {
			resp, err := http.Post(srv.URL+"/repos/"+repo+"/clone", "text/plain", nil)
			if err != nil {
				t.Error(err)
				ch <- reply{}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			ch <- reply{resp.StatusCode, string(b), resp.Header.Get("Retry-After")}
		}()
		return ch
	}
	first := post("linux")
	if got := <-started; got != "linux" {
		t.Fatalf("started %q", got)
	}
	second := post("linux")
	waitFor(t, "the second clone to queue", func() bool { return s.Snapshot().Queued == 1 })
	third := post("git") // same caller (127.0.0.1), whose one queue slot is taken
	r3 := <-third
	if r3.code != http.StatusTooManyRequests || r3.hint == "" {
		t.Fatalf("third request: %+v, want 429 with Retry-After", r3)
	}
	select {
	case repo := <-started:
		t.Fatalf("%s started while linux was being cloned", repo)
	default:
	}
	close(release)
	for _, ch := range []<-chan reply{first, second} {
		if r := <-ch; r.code != http.StatusOK || r.body != "cloned linux" {
			t.Fatalf("clone: %+v", r)
		}
	}
	if c := s.Snapshot().Counters; c.Completed != 2 || c.RejectedQueueFull != 1 {
		t.Fatalf("counters %+v", c)
	}
	srv.CloseClientConnections()
	must(t, s.Close(t.Context()))
}
