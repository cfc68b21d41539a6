package admission

import (
	"math"
	"testing"
	"time"
)

// core drives the scheduler's locked core in one goroutine with explicit
// times, the way the public methods do, checking invariants after each step.
type core struct {
	t   testing.TB
	s   *Scheduler
	now int64 // an instant (see Scheduler.now)
}

func newCore(t testing.TB, cfg Config, types map[JobType]JobTypeConfig) *core {
	t.Helper()
	s, err := New(cfg)
	must(t, err)
	for name, c := range types {
		must(t, s.RegisterType(name, c))
	}
	return &core{t: t, s: s, now: time.Unix(1_000_000, 0).UnixNano()}
}

func (c *core) advance(d time.Duration) { c.now += int64(d) }

// arrive queues a foreground job and dispatches; it returns the job and the
// jobs admitted by that dispatch.
func (c *core) arrive(typ JobType, key, id string) (*job, []*job) {
	c.t.Helper()
	j := &job{jobID: id, foreground: true}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	wake, err := c.s.enqueueLocked(j, c.s.types[typ], key, c.now, nil)
	if err != nil {
		c.t.Fatalf("enqueue %s/%s for %q: %v", typ, id, key, err)
	}
	wake = c.s.dispatchLocked(c.now, wake)
	c.check()
	return j, wake
}

// finish completes a running job that held its seat since admission.
func (c *core) finish(j *job) []*job {
	c.t.Helper()
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.finishLocked(j, c.now, sinceNs(c.now, j.started), true)
	wake := c.s.dispatchLocked(c.now, nil)
	c.check()
	return wake
}

func (c *core) check() {
	c.t.Helper()
	if err := c.s.checkInvariantsLocked(); err != nil {
		c.t.Fatalf("invariant broken: %v\n%s", err, c.s.dumpLocked())
	}
}

func (c *core) v(key string) float64 {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if k := c.s.activeKeyLocked(key); k != nil {
		return k.v
	}
	if k := c.s.keys.get(key); k != nil {
		return k.v
	}
	return math.NaN()
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestVirtualTimeCharges: admission charges est/w, completion corrects by
// (observed-est)/w, and the estimate learns by EMA seeded with DefaultCost.
func TestVirtualTimeCharges(t *testing.T) {
	c := newCore(t, Config{Capacity: 4, Keys: map[string]KeyPolicy{"w2": {Weight: 2}}},
		map[JobType]JobTypeConfig{"clone": {Priority: 8, DefaultCost: 10 * time.Second}})
	j, _ := c.arrive("clone", "w2", "linux")
	if got := c.v("w2"); !near(got, 5) { // 10s / weight 2
		t.Fatalf("V after admission = %v, want 5", got)
	}
	c.advance(40 * time.Second)
	c.finish(j)
	if got := c.v("w2"); !near(got, 20) { // 5 + (40-10)/2
		t.Fatalf("V after completion = %v, want 20", got)
	}
	c.s.mu.Lock()
	est, _ := c.s.estimateLocked(c.s.types["clone"], "linux", c.now)
	c.s.mu.Unlock()
	if !near(est, 0.3*40+0.7*10) {
		t.Fatalf("estimate = %v, want EMA 19", est)
	}
	// The next clone of linux is charged the learned 19s.
	j, _ = c.arrive("clone", "w2", "linux")
	if got := c.v("w2"); !near(got, 20+19.0/2) {
		t.Fatalf("V = %v, want %v", got, 20+19.0/2)
	}
	c.finish(j)
}

// TestActivation: a key that was idle gets no credit (it is lifted to V_sys),
// a returning key keeps its debt, and a new key starts at V_sys.
func TestActivation(t *testing.T) {
	c := newCore(t, Config{Capacity: 2}, map[JobType]JobTypeConfig{"x": {Priority: 8, DefaultCost: 10 * time.Second}})
	// busy runs a long job; heavy runs three 10s jobs one after another.
	long, _ := c.arrive("x", "busy", "long")
	for range 3 {
		j, _ := c.arrive("x", "heavy", "h")
		c.advance(10 * time.Second)
		c.finish(j)
	}
	if got := c.v("heavy"); !near(got, 30) {
		t.Fatalf("heavy V = %v, want 30", got)
	}
	// V_sys is the start tag of busy's job: 0. heavy is idle with debt 30.
	j, _ := c.arrive("x", "heavy", "h")
	if got := c.v("heavy"); !near(got, 40) {
		t.Fatalf("returning heavy key lost its debt: V = %v, want 30+10", got)
	}
	c.advance(10 * time.Second)
	c.finish(j)
	c.advance(50 * time.Second)
	c.finish(long) // busy's job held its seat 90s: V_busy = 90
	// Start a job for busy; V_sys becomes its start tag 90.
	b, _ := c.arrive("x", "busy", "again")
	if got := c.v("busy"); !near(got, 100) {
		t.Fatalf("busy V = %v, want 100", got)
	}
	if c.s.vsys != 90 {
		t.Fatalf("V_sys = %v, want 90 (start tag of the only running job)", c.s.vsys)
	}
	// heavy (V 40, idle) comes back: lifted to V_sys, no credit for idling.
	h, _ := c.arrive("x", "heavy", "h")
	if got := c.v("heavy"); !near(got, 90+10) {
		t.Fatalf("idle key kept credit: V = %v, want V_sys 90 + 10", got)
	}
	// A brand-new key starts at V_sys too.
	c.s.mu.Lock()
	k := c.s.activateKeyLocked("fresh", c.now)
	v := k.v
	c.s.maybeIdleLocked(k, c.now)
	c.s.mu.Unlock()
	if v != 90 {
		t.Fatalf("new key starts at %v, want V_sys 90", v)
	}
	c.finish(b)
	c.finish(h)
}

// TestKeyExpiryAndEviction: idle key state expires after KeyTTL and is
// evicted beyond MaxKeys; either way the key returns at V_sys, never below.
func TestKeyExpiryAndEviction(t *testing.T) {
	c := newCore(t, Config{Capacity: 1, MaxKeys: 2, KeyTTL: time.Minute},
		map[JobType]JobTypeConfig{"x": {Priority: 1, DefaultCost: time.Second}})
	j, _ := c.arrive("x", "a", "1")
	c.advance(100 * time.Second)
	c.finish(j) // a: V 100, idle
	for _, k := range []string{"b", "c"} {
		j, _ := c.arrive("x", k, "1")
		c.finish(j)
	}
	c.s.mu.Lock()
	kept := c.s.keys.get("a") != nil
	n := c.s.keys.len()
	c.s.mu.Unlock()
	if kept || n != 2 {
		t.Fatalf("%d keys tracked, a kept=%v; want 2 and a evicted", n, kept)
	}
	// b is idle with V = V_sys; after the TTL it is forgotten, idle longest.
	c.advance(2 * time.Minute)
	j, _ = c.arrive("x", "d", "1")
	c.finish(j)
	c.s.mu.Lock()
	kept = c.s.keys.get("b") != nil
	c.s.mu.Unlock()
	if kept {
		t.Fatal("idle key past KeyTTL still tracked")
	}
}

// TestKeysForgottenIdleLongestFirst: with MaxKeys 2, a new key has the key
// idle longest forgotten. a and b become active in that order, but b goes
// idle first (a arrives again while active), so c has b forgotten, not a;
// a key that was active again since (a) counts from its last idling.
func TestKeysForgottenIdleLongestFirst(t *testing.T) {
	c := newCore(t, Config{Capacity: 4, MaxKeys: 2}, map[JobType]JobTypeConfig{"x": {Priority: 4, DefaultCost: time.Second}})
	a1, _ := c.arrive("x", "a", "1")
	b1, _ := c.arrive("x", "b", "1")
	a2, _ := c.arrive("x", "a", "2") // a stays active until a2 ends
	for _, j := range []*job{a1, b1, a2} {
		c.finish(j)
	}
	tracked := func(names ...string) []bool {
		c.s.mu.Lock()
		defer c.s.mu.Unlock()
		var out []bool
		for _, n := range names {
			out = append(out, c.s.keys.get(n) != nil)
		}
		return out
	}
	j, _ := c.arrive("x", "c", "1")
	c.finish(j)
	if got := tracked("a", "b", "c"); !got[0] || got[1] || !got[2] {
		t.Fatalf("after c: a, b, c tracked %v; want b forgotten (idle first)", got)
	}
	// a, activated again, goes idle after c: d has c forgotten.
	j, _ = c.arrive("x", "a", "3")
	c.finish(j)
	j, _ = c.arrive("x", "d", "1")
	c.finish(j)
	if got := tracked("a", "c", "d"); !got[0] || got[1] || !got[2] {
		t.Fatalf("after d: a, c, d tracked %v; want c forgotten (idle longer than a)", got)
	}
}

// TestCostTTL: a cost estimate older than CostTTL is forgotten.
func TestCostTTL(t *testing.T) {
	c := newCore(t, Config{Capacity: 1, CostTTL: time.Hour}, map[JobType]JobTypeConfig{"x": {Priority: 1, DefaultCost: time.Second}})
	j, _ := c.arrive("x", "k", "repo")
	c.advance(11 * time.Second)
	c.finish(j)
	c.s.mu.Lock()
	fresh, _ := c.s.estimateLocked(c.s.types["x"], "repo", c.now)
	stale, _ := c.s.estimateLocked(c.s.types["x"], "repo", c.now+int64(2*time.Hour))
	c.s.mu.Unlock()
	if !near(fresh, 0.3*11+0.7*1) || stale != 1 {
		t.Fatalf("estimates fresh %v stale %v", fresh, stale)
	}
}

// TestMinSeatsFirst: a key below its MinSeats goes before keys with lower
// virtual time.
func TestMinSeatsFirst(t *testing.T) {
	c := newCore(t, Config{Capacity: 2, Keys: map[string]KeyPolicy{"vip": {MinSeats: 1}}},
		map[JobType]JobTypeConfig{"x": {Priority: 8, DefaultCost: time.Second}})
	// vip has debt; other has none.
	j, _ := c.arrive("x", "vip", "1")
	c.advance(50 * time.Second)
	c.finish(j)
	a, _ := c.arrive("x", "other", "a")
	b, _ := c.arrive("x", "other", "b")
	v, wake := c.arrive("x", "vip", "2")
	if len(wake) != 0 {
		t.Fatal("admitted beyond capacity")
	}
	w := c.finish(a)
	if len(w) != 1 || w[0] != v {
		t.Fatalf("freed seat went to %v, want the vip key below MinSeats", w)
	}
	c.finish(b)
	c.finish(v)
}

// TestActiveKeySurvivesEviction: with MaxKeys 2, a key running a long job
// is never forgotten while newer keys come and go; its state stays (its V
// and its running job), a new arrival of it finds the same state, and once
// it is idle the bound holds again.
func TestActiveKeySurvivesEviction(t *testing.T) {
	c := newCore(t, Config{Capacity: 4, MaxKeys: 2}, map[JobType]JobTypeConfig{"x": {Priority: 4, DefaultCost: time.Second}})
	long, _ := c.arrive("x", "a", "long")
	for _, k := range []string{"b", "c", "d"} {
		j, _ := c.arrive("x", k, "1")
		c.finish(j)
	}
	c.s.mu.Lock()
	kept, n := c.s.keys.get("a") == long.key, c.s.keys.len()
	c.s.mu.Unlock()
	if !kept || n != 2 {
		t.Fatalf("a tracked %v, %d keys tracked; want a and one idle key (d)", kept, n)
	}
	again, _ := c.arrive("x", "a", "2")
	if again.key != long.key {
		t.Fatal("a second arrival of an active key got new state")
	}
	c.advance(10 * time.Second)
	c.finish(long)
	c.finish(again)
	c.s.mu.Lock()
	kept, n = c.s.keys.get("a") == long.key, c.s.keys.len()
	c.s.mu.Unlock()
	if !kept || n != 2 {
		t.Fatalf("after going idle: a tracked %v, %d keys tracked; want a and d", kept, n)
	}
}
