package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// debugGet serves one request to DebugHandler(s) and returns the recorder.
func debugGet(t *testing.T, s *Scheduler, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	DebugHandler(s).ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

// debugJSON fetches and decodes ?format=json, both into the wire struct and
// into a generic map (to check the field names themselves).
func debugJSON(t *testing.T, s *Scheduler) (debugSnapshot, map[string]any) {
	t.Helper()
	rec := debugGet(t, s, http.MethodGet, "/debug/admission?format=json")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET ?format=json: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var snap debugSnapshot
	var raw map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &snap); err != nil {
		t.Fatalf("decoding %s: %v", rec.Body, err)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatalf("decoding %s: %v", rec.Body, err)
	}
	return snap, raw
}

func sortedKeys(m any) []string {
	obj, _ := m.(map[string]any)
	var ks []string
	for k := range obj {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestDebugHandlerJSONQueued: a request waiting for the only seat appears in
// the JSON queue with its type, key, job ID and wait, under stable names.
func TestDebugHandlerJSONQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{DefaultCost: 5 * time.Second}, JobTypeConfig{})
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "repo-a", FairnessKey: "alice"})
		must(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		ch := acquireAsync(ctx, s, Request{Type: "fg", JobID: "repo-b", FairnessKey: "bob"})
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()

		snap, raw := debugJSON(t, s)
		if snap.Capacity != 1 || snap.InUse != 1 || snap.Queued != 1 || snap.ActiveKeys != 2 {
			t.Errorf("capacity %d, in use %d, queued %d, active keys %d; want 1, 1, 1, 2",
				snap.Capacity, snap.InUse, snap.Queued, snap.ActiveKeys)
		}
		want := debugQueued{Type: "fg", JobID: "repo-b", Key: "bob", BasePriority: PriorityForeground,
			EffectivePriority: PriorityForeground, WaitSeconds: 1.5, Wait: "1.5s"}
		if len(snap.Queue) != 1 || snap.Queue[0] != want {
			t.Fatalf("queue = %+v, want [%+v]", snap.Queue, want)
		}
		if i := slices.IndexFunc(snap.Keys, func(k debugKey) bool { return k.Key == "alice" }); i < 0 ||
			snap.Keys[i].Share != 1 || snap.Keys[i].Running != 1 || snap.Keys[i].VirtualSeconds != 5 {
			t.Errorf("keys = %+v, want alice running with share 1 and V = 5 s", snap.Keys)
		}
		if snap.Counters.Submitted != 2 || snap.Counters.Admitted != 1 {
			t.Errorf("counters = %+v", snap.Counters)
		}

		// The names are the documented wire format: changing one breaks
		// whoever scripts against it.
		for _, c := range []struct {
			what string
			obj  any
			want []string
		}{
			{"top level", raw, []string{"active_keys", "adaptive", "capacity", "counters", "in_use", "keys", "queue", "queued",
				"system_virtual_seconds", "tiers", "time", "types"}},
			{"queue entry", raw["queue"].([]any)[0], []string{"base_priority", "blocked_by", "effective_priority",
				"job_id", "key", "type", "urgent", "wait", "wait_seconds"}},
			{"key", raw["keys"].([]any)[0], []string{"key", "min_seats", "paused", "queued", "running", "share", "virtual_seconds", "weight"}},
			{"tier", raw["tiers"].([]any)[0], []string{"limit", "priority", "queued", "running"}},
			{"type", raw["types"].([]any)[0], []string{"conflict_group", "default_cost", "default_cost_seconds",
				"learned_costs", "max_concurrency", "max_wait", "max_wait_seconds", "mean_cost", "mean_cost_seconds", "paused",
				"priority", "queued", "running", "type"}},
		} {
			if got := sortedKeys(c.obj); !slices.Equal(got, c.want) {
				t.Errorf("%s fields = %q, want %q", c.what, got, c.want)
			}
		}
		var counterNames []string
		for _, c := range snap.Counters.List() {
			counterNames = append(counterNames, c.Name)
		}
		slices.Sort(counterNames)
		if got := sortedKeys(raw["counters"]); !slices.Equal(got, counterNames) {
			t.Errorf("JSON counters %q, page counters %q", got, counterNames)
		}

		cancel()
		if r := <-ch; !errors.Is(r.err, context.Canceled) {
			t.Errorf("queued Acquire = %v, %v", r.p, r.err)
		}
		p.Release()
		checkInvariants(t, s)
		must(t, s.Close(t.Context()))
	})
}

// TestDebugHandlerEmpty: an idle scheduler gives lists, not nulls, and a
// page that says so.
func TestDebugHandlerEmpty(t *testing.T) {
	s, err := New(Config{Capacity: 3})
	must(t, err)
	rec := debugGet(t, s, http.MethodGet, "/?format=json")
	for _, f := range []string{`"types": []`, `"tiers": []`, `"keys": []`, `"queue": []`} {
		if !strings.Contains(rec.Body.String(), f) {
			t.Errorf("JSON lacks %s:\n%s", f, rec.Body)
		}
	}
	page := debugGet(t, s, http.MethodGet, "/").Body.String()
	for _, f := range []string{"nothing queued", "no active keys", "no job types registered", `max="3" value="0"`} {
		if !strings.Contains(page, f) {
			t.Errorf("page lacks %q", f)
		}
	}
	must(t, s.Close(t.Context()))
}

// TestDebugHandlerLearnedCost: the page's learned costs are the mean of the
// unexpired estimates of a type, and the type's default otherwise.
func TestDebugHandlerLearnedCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScheduler(t, Config{Capacity: 2, CostTTL: time.Hour},
			JobTypeConfig{DefaultCost: 10 * time.Second}, JobTypeConfig{DefaultCost: 3 * time.Second})
		run := func(id string, d time.Duration) {
			must(t, s.RunSync(t.Context(), "fg", id, "k", func(context.Context) error {
				time.Sleep(d)
				return nil
			}))
		}
		run("a", 2*time.Second) // 0.3·2 + 0.7·10 = 7.6
		run("b", 4*time.Second) // 0.3·4 + 0.7·10 = 8.2
		costs := func() map[JobType]debugType {
			snap, _ := debugJSON(t, s)
			m := make(map[JobType]debugType)
			for _, ty := range snap.Types {
				m[ty.Type] = ty
			}
			return m
		}
		c := costs()
		if fg := c["fg"]; fg.LearnedCosts != 2 || math.Abs(fg.MeanCostSeconds-7.9) > 1e-9 || fg.MeanCost != "7.9s" {
			t.Errorf("fg learned costs = %+v, want 2 estimates averaging 7.9 s", fg)
		}
		if bg := c["bg"]; bg.LearnedCosts != 0 || bg.MeanCostSeconds != 3 || bg.MeanCost != "3s" || bg.DefaultCost != "3s" {
			t.Errorf("bg learned costs = %+v, want none and the 3 s default", bg)
		}
		time.Sleep(time.Hour + time.Second) // both estimates expire (b was learned 4 s after a)
		if fg := costs()["fg"]; fg.LearnedCosts != 0 || fg.MeanCost != "10s" {
			t.Errorf("after CostTTL, fg learned costs = %+v, want none and the 10 s default", fg)
		}
		must(t, s.Close(t.Context()))
	})
}

// TestDebugHandlerHTML: the page has every section, escapes caller input,
// and allows by hash exactly the script and style it carries.
func TestDebugHandlerHTML(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			hostileKey = `<script>alert(1)</script>`
			hostileID  = `"><img src=x onerror=alert(2)>`
		)
		s := newTestScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{})
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "repo-a", FairnessKey: "alice"})
		must(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		ch := acquireAsync(ctx, s, Request{Type: "fg", JobID: hostileID, FairnessKey: hostileKey})
		synctest.Wait()

		rec := debugGet(t, s, http.MethodGet, "/debug/admission")
		page := rec.Body.String()
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("GET page: %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
		}
		for _, f := range []string{
			`id="seats"`, `id="tiers"`, `id="types"`, `id="queue"`, `id="keys"`, `id="costs"`, `id="counters"`,
			`<span id="in-use">1</span> / <span id="capacity">1</span>`,
			`&lt;script&gt;alert(1)&lt;/script&gt;`, `&#34;&gt;&lt;img src=x onerror=alert(2)&gt;`,
			`<th>rejected_wait_timeout</th>`, `http-equiv="refresh"`, `fetch("?format=json"`,
		} {
			if !strings.Contains(page, f) {
				t.Errorf("page lacks %s", f)
			}
		}
		if strings.Count(page, "<script") != 1 || strings.Contains(page, "<img") {
			t.Errorf("caller input reached the page unescaped:\n%s", page)
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
			if strings.Contains(debugScript, bad) {
				t.Errorf("the page's script uses %s", bad)
			}
		}
		csp := rec.Header().Get("Content-Security-Policy")
		for _, tag := range []string{"script", "style"} {
			_, rest, _ := strings.Cut(page, "<"+tag+">")
			body, _, ok := strings.Cut(rest, "</"+tag+">")
			if !ok || !strings.Contains(csp, "'"+cspHash(body)+"'") {
				t.Errorf("Content-Security-Policy %q does not allow the page's %s", csp, tag)
			}
		}

		js := debugGet(t, s, http.MethodGet, "/debug/admission?format=json").Body.String()
		if strings.Contains(js, "<") || !strings.Contains(js, `\u003cscript\u003ealert(1)\u003c/script\u003e`) {
			t.Errorf("JSON does not escape the hostile key:\n%s", js)
		}

		cancel()
		<-ch
		p.Release()
		must(t, s.Close(t.Context()))
	})
}

func TestDebugHandlerRejects(t *testing.T) {
	s, err := New(Config{Capacity: 1})
	must(t, err)
	for _, c := range []struct {
		method, target string
		code           int
		body           string
	}{
		{http.MethodGet, "/?format=xml", http.StatusBadRequest, `unknown format "xml": use format=json`},
		{http.MethodGet, "/?format=JSON", http.StatusBadRequest, `unknown format "JSON"`},
		{http.MethodPost, "/?format=json", http.StatusMethodNotAllowed, "method POST not allowed"},
		{http.MethodDelete, "/", http.StatusMethodNotAllowed, "use GET or HEAD"},
		{http.MethodHead, "/", http.StatusOK, ""},
		{http.MethodGet, "/?format=html", http.StatusOK, "<title>fairseat admission</title>"},
	} {
		rec := debugGet(t, s, c.method, c.target)
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.body) {
			t.Errorf("%s %s = %d %q, want %d with %q", c.method, c.target, rec.Code, rec.Body, c.code, c.body)
		}
		if c.code == http.StatusMethodNotAllowed && rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: Allow = %q", c.method, rec.Header().Get("Allow"))
		}
	}
	must(t, s.Close(t.Context()))
}

// debugPageRenders renders s's debug page and its JSON, as the fuzz
// drivers do after each input's last operation, from whatever state it
// left (a seat of an hour, a limit at its bounds, urgent, parked and paused
// work): both
// must be served, the JSON must decode, and an adaptive limit in it must
// be the snapshot's. encoding/json refuses NaN and infinities, so a float
// the scheduler's invariants let through but the page could not serve
// fails here.
func debugPageRenders(s *Scheduler) error {
	h := DebugHandler(s)
	for _, format := range []string{"html", "json"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug?format="+format, nil))
		if rec.Code != http.StatusOK {
			return fmt.Errorf("debug page (%s): %d %s", format, rec.Code, rec.Body)
		}
		if format != "json" {
			continue
		}
		var page struct {
			Adaptive *struct {
				Limit float64 `json:"limit"`
			} `json:"adaptive"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			return fmt.Errorf("debug JSON does not decode: %v\n%s", err, rec.Body)
		}
		if a := s.Snapshot().Adaptive; (a == nil) != (page.Adaptive == nil) || a != nil && page.Adaptive.Limit != a.Limit {
			return fmt.Errorf("debug JSON's adaptive state %+v, snapshot's %+v", page.Adaptive, a)
		}
	}
	return nil
}
