package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// The soak's end: every call and submission had exactly one outcome, and
// the heap stayed bounded under key churn.

// soakLog is the scheduler's logger in the soak: the reports of background
// jobs that did not run or failed are how their outcomes reach the soak
// (Submit has returned long before).
type soakLog struct{ k *soak }

func (h *soakLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *soakLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *soakLog) WithGroup(string) slog.Handler            { return h }

func (h *soakLog) Handle(_ context.Context, r slog.Record) error {
	var typ, id string
	var err error
	var retry bool
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "type":
			typ = a.Value.String()
		case "job_id":
			id = a.Value.String()
		case "err":
			err, _ = a.Value.Any().(error)
		case "retry":
			retry = a.Value.Bool()
		}
		return true
	})
	k := h.k
	switch r.Message {
	case "admission: background job did not run":
		k.notRunLogged(JobType(typ), id, err)
	case "admission: background job failed":
		k.failedLogged(JobType(typ), id, err, retry)
	case "admission: event handler too slow; events dropped":
	default:
		k.sum.Violationf(k.t, "unexpected log record %q", r.Message)
	}
	return nil
}

func (k *soak) notRunLogged(typ JobType, id string, err error) {
	var reason string
	switch {
	case errors.Is(err, ErrSuperseded):
		reason = "superseded"
	case errors.Is(err, ErrWaitTimeout):
		reason = "expired"
	case errors.Is(err, ErrQueueFull):
		reason = "pushed out"
	case errors.Is(err, ErrClosed):
		reason = "dropped at Close"
	default:
		k.sum.Violationf(k.t, "background job %s/%s did not run: unexpected %v", typ, id, err)
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.notRun[reason]++
	p := k.pairs[costKey{typ, id}]
	if p == nil {
		k.sum.Violationf(k.t, "report of %s/%s, never submitted", typ, id)
		return
	}
	p.notRun++
}

func (k *soak) failedLogged(typ JobType, id string, err error, retry bool) {
	if retry && !IsRetryable(err) {
		k.sum.Violationf(k.t, "%s/%s will be retried after %v, not marked Retryable", typ, id, err)
	}
	if !errors.Is(err, errSoakFn) && !errors.Is(err, ErrJobPanicked) {
		k.sum.Violationf(k.t, "%s/%s failed with %v, not its own error", typ, id, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.failures[retry]++
	p := k.pairs[costKey{typ, id}]
	if p == nil {
		k.sum.Violationf(k.t, "failure of %s/%s, never submitted", typ, id)
		return
	}
	if retry {
		p.retries++
	}
}

// soakStore is the adaptive soak's CapacityStore: it loads the limit
// soakLoadedLimit and no estimate, keeps none, and counts the limits it
// is given, and those outside the soak's widest bounds. (Not the unit
// tests' capStore, which keeps every limit saved: a soak of hours saves
// hundreds of thousands, and its heap is checked.)
type soakStore struct {
	loads, saves, outside atomic.Int64
}

const soakLoadedLimit = 5

func (*soakStore) Load(context.Context) ([]CostEstimate, error) { return nil, nil }
func (*soakStore) Save(context.Context, []CostEstimate) error   { return nil }
func (st *soakStore) LoadCapacity(context.Context) (int, error) {
	st.loads.Add(1)
	return soakLoadedLimit, nil
}
func (st *soakStore) SaveCapacity(_ context.Context, limit int) error {
	st.saves.Add(1)
	if limit < soakMinLow || limit > soakMaxHigh {
		st.outside.Add(1)
	}
	return nil
}

// check runs after Close, once every worker has returned.
func (k *soak) check() {
	t := k.t
	if st := k.store; st != nil {
		if st.loads.Load() != 1 || st.saves.Load() == 0 || st.outside.Load() != 0 {
			k.sum.Violationf(t, "cost store: %d loads of the limit (want 1), %d saves (want some), %d limits saved outside [%d, %d]",
				st.loads.Load(), st.saves.Load(), st.outside.Load(), soakMinLow, soakMaxHigh)
		}
	}
	if n, m := k.started.Load(), k.returned.Load(); n != m {
		k.sum.Lostf(t, "%d foreground calls made, %d returned", n, m)
	}
	if err := k.ledger.idle(); err != nil {
		k.sum.Lostf(t, "after Close: %v", err)
	}
	snap := k.s.Snapshot()
	if snap.InUse != 0 || snap.Queued != 0 || snap.ActiveKeys != 0 {
		k.sum.Lostf(t, "after Close: %d seats in use, %d queued, %d active keys", snap.InUse, snap.Queued, snap.ActiveKeys)
	}
	checkInvariants(t, k.s)
	// A timer that fired as Close began (a TTL, a retry backoff) may still
	// be reporting: wait for the background accounts to settle, or fail
	// with what they say after a generous while.
	var gap, fails, logged int64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		gap, fails, logged = k.backgroundGap()
		if gap == int64(k.s.Snapshot().Counters.Coalesced) && fails == logged || time.Now().After(deadline) {
			break
		}
	}
	c := k.s.Snapshot().Counters
	if gap != int64(c.Coalesced) {
		k.sum.Lostf(t, "background placements without an outcome: %d; the scheduler coalesced %d", gap, c.Coalesced)
	}
	if fails != logged {
		k.sum.Lostf(t, "%d background attempts failed, %d failures logged", fails, logged)
	}
	k.mu.Lock()
	for p, a := range k.pairs {
		if d := a.accepted + a.retries - a.runs - a.notRun; d < 0 || (d > 0 && soakTypes[p.typ].Duplicates == Allow) {
			k.sum.Lostf(t, "%s/%.20s: %d accepted + %d retries, %d runs + %d reported not run", p.typ, p.id, a.accepted, a.retries, a.runs, a.notRun)
		}
	}
	k.mu.Unlock()
	if n := c.Ended(); c.Submitted != n {
		k.sum.Lostf(t, "counters: %d submitted, %d ended (%+v)", c.Submitted, n, c)
	}
	if got := uint64(k.completed.Load()); c.Completed != got {
		k.sum.Lostf(t, "the scheduler completed %d jobs, the jobs count %d", c.Completed, got)
	}
	k.logOutcomes(c)
}

// backgroundGap returns the background placements that had no outcome (the
// coalesced ones, if nothing was lost), and the failures run and logged.
func (k *soak) backgroundGap() (gap, fails, logged int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, a := range k.pairs {
		gap += a.accepted + a.retries - a.runs - a.notRun
	}
	return gap, k.fails, k.failures[true] + k.failures[false]
}

func (k *soak) logOutcomes(c Counters) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var lines []string
	for kind, n := range k.outcomes {
		lines = append(lines, fmt.Sprintf("%s %d", kind, n))
	}
	for reason, n := range k.notRun {
		lines = append(lines, fmt.Sprintf("background %s %d", reason, n))
	}
	for reason, n := range k.byReason {
		lines = append(lines, fmt.Sprintf("capacity changes (%s) %d", reason, n))
	}
	slices.Sort(lines)
	k.t.Logf("outcomes: %s; background failures logged %d (%d retried); fresh keys %d; peak seats held %d; events %d (%d dropped)\ncounters %+v",
		strings.Join(lines, ", "), k.failures[false]+k.failures[true], k.failures[true], k.keys.Load(), k.ledger.peak,
		k.events.Load(), c.EventsDropped, c)
}

// Heap bound under key churn. The scheduler keeps at most MaxKeys idle
// key states (an LRU; active keys are bounded by the queue and the seats)
// and MaxCostEntries cost estimates, each with its LRU entry, its map slot
// and its name: a key state is 128 bytes (structs_test.go), its LRU list
// element about 64, its map slot about 48 and its name at most 80 (a
// folded identifier is "sha256:" and 64 hex digits), so under 512 bytes a
// key; a cost entry (48 bytes) with the same overheads and its job ID is
// under 512 too. The free lists keep at most maxFree records each, and the
// idle conflict entries at most maxIdleResources. So once the soak has
// ended, the heap may have grown by at most
//
//	MaxKeys·512 B + MaxCostEntries·512 B + 4 MiB
//
// over the heap before New, 4 MiB covering the free lists, the idle
// resources, the soak's own bounded ledgers (its limit histories alone are
// up to 20 · limitLogMax · 16 B = 320 KiB) and the runtime's noise; the
// soak churns through at least 100,000 fresh keys, whose states, had they
// been kept, would take 30 MB or more.
func (k *soak) checkHeap(before, after uint64) {
	bound := uint64(soakMaxKeys*512 + soakMaxCosts*512 + 4<<20)
	grew := int64(after) - int64(before)
	k.t.Logf("heap in use after GC: %.1f MiB before New, %.1f MiB after Close (grew %.2f MiB, bound %.2f MiB) with %d fresh keys",
		mib(before), mib(after), float64(grew)/(1<<20), mib(bound), k.keys.Load())
	if k.keys.Load() < soakChurn {
		k.sum.Violationf(k.t, "only %d fresh keys churned, want %d", k.keys.Load(), soakChurn)
	}
	if grew > int64(bound) {
		k.sum.Violationf(k.t, "heap grew %d bytes under key churn, bound %d", grew, bound)
	}
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
