package admission

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
)

// The soak's ledger: the invariants of a running scheduler, checked from
// counters the jobs keep themselves, never from the scheduler's own
// bookkeeping.
//
// A job enters the ledger (start) once it holds its seat — when Acquire has
// returned its permit, or when RunSync's or a background job's fn begins —
// and leaves it (end) before it gives the seat back: before Permit.Release,
// or as fn returns (or panics). So the jobs in the ledger are always a
// subset of the jobs holding seats, and a count the ledger sees above a
// limit is a count the scheduler had too.
//
// Limits change at run time (SetCapacity, SetTypeLimit, SetKeyPolicy,
// dry-run), and lowering a limit never pre-empts running work, so which
// limit a count must respect depends on when its jobs were admitted. Take
// the jobs in the ledger when job j starts, and among them the one admitted
// last, m: every other one held its seat when m was admitted, so unless m
// was admitted in dry-run, they number at most the limit in force at m's
// admission. m was admitted after j was submitted (it was admitted no
// earlier than j) and before now. So the count at j's start is bounded by
// the largest limit in force at any moment since j was submitted, and
// excused entirely if dry-run was on at any moment since. Each limit is
// therefore kept as a history (limitLog), written before and after every
// change, and j's start checks against its maximum since j's submission.
// For a retried background job, "submitted" is the end of its previous
// attempt, which precedes its requeue: a longer window, a weaker but still
// sound bound.
//
// Tiers are capped except for urgent jobs, which the ledger cannot see. A
// job can be urgent only if it has waited its starvation bound, measured on
// the scheduler's clock from its enqueue (later than the ledger's
// submission) with paused time left out (a thaw never adds to it: the
// scheduler's clock does not run backwards under its lock, lockAt); so a
// job that started less than that bound after the ledger's submission
// instant was not urgent, and the tier check counts the others as
// possibly urgent and leaves them out. The
// argument then runs over the last non-urgent job admitted, m, and m was
// admitted no earlier than j only if j is not urgent itself: so only a job
// that cannot have been urgent checks its tier (otherwise m may have been
// admitted in a dry-run that ended before j was submitted).

// limitLog is the history of one limit: the values it had, in clock order.
// A value of math.MaxInt is "no limit". Only the last limitLogMax entries
// are kept; the maximum of those dropped is kept instead, which bounds
// (loosely) the rare job submitted before the oldest entry left.
type limitLog struct {
	entries []limitEntry
	dropped int // max of the entries dropped; meaningful when ndropped > 0
	ndrop   int
}

type limitEntry struct {
	at uint64 // ledger clock
	v  int
}

const limitLogMax = 1024

func newLimitLog(v int) *limitLog { return &limitLog{entries: []limitEntry{{0, v}}} }

func (l *limitLog) set(at uint64, v int) {
	if len(l.entries) == limitLogMax {
		l.dropped = max(l.dropped, l.entries[0].v)
		if l.ndrop == 0 {
			l.dropped = l.entries[0].v
		}
		l.ndrop++
		l.entries = append(l.entries[:0], l.entries[1:]...)
	}
	l.entries = append(l.entries, limitEntry{at, v})
}

// span returns the least and greatest values in force at some moment of
// [from, now].
func (l *limitLog) span(from uint64) (lo, hi int) {
	lo, hi = math.MaxInt, math.MinInt
	i := len(l.entries) - 1
	for ; i >= 0; i-- {
		v := l.entries[i].v
		lo, hi = min(lo, v), max(hi, v)
		if l.entries[i].at <= from {
			return lo, hi
		}
	}
	if l.ndrop > 0 { // from precedes what is kept: the dropped entries may have been in force
		lo, hi = math.MinInt, max(hi, l.dropped)
	}
	return lo, hi
}

func (l *limitLog) last() int { return l.entries[len(l.entries)-1].v }

// soakRun is one job in the ledger while it holds its seat.
type soakRun struct {
	typ    JobType
	tier   Priority // its type's priority, whose cap it counts against
	prio   Priority // its own base priority (WithPriority), from which it ages
	key    string
	res    string // conflict resource (the soak's types share one group); "" = none
	excl   bool
	from   uint64    // ledger clock at submission (or at the previous attempt's end)
	urgent bool      // it may have been urgent (see above)
	first  time.Time // its first submission (aging continues across retries)

	// For a violation's report only.
	attempt int       // a background job's attempt (1, 2, ...); 0 = foreground
	started time.Time // when it entered the ledger
}

// String describes r for a violation's report.
func (r *soakRun) String() string {
	kind := "foreground"
	if r.attempt > 0 {
		kind = fmt.Sprintf("background attempt %d", r.attempt)
	}
	return fmt.Sprintf("%s (%s, base priority %d, urgent %v): submitted %v ago, in the ledger %v",
		r.typ, kind, r.prio, r.urgent, time.Since(r.first), time.Since(r.started))
}

// soakLedger counts the jobs holding seats and checks the limits. It is
// safe for concurrent use.
type soakLedger struct {
	tierCap  map[Priority]int
	urgentIn func(p Priority) time.Duration // starvation bound of base priority p; < 0 = never urgent
	report   func(format string, args ...any)
	diag     func() string // the scheduler's own view, for a violation's report (may be nil)

	mu         sync.Mutex
	clock      uint64
	capacity   *limitLog
	typeLimit  map[JobType]*limitLog
	keyLimit   map[string]*limitLog // named keys' MaxInFlight; other keys use defaultKey
	defaultKey int
	dry        *limitLog // 1 while dry-run may be on
	typePaused map[JobType]*limitLog
	keyPaused  map[string]*limitLog // 1 while paused with no deadline

	running  int
	live     map[*soakRun]bool // the jobs in the ledger, for a violation's report
	byType   map[JobType]int
	byTier   map[Priority]int
	urgentBy map[Priority]int
	byKey    map[string]int    // entries removed at zero: bounded under key churn
	byRes    map[string][2]int // entries removed at zero: bounded under job ID churn
	peak     int
}

// tick advances the ledger clock and returns it.
func (l *soakLedger) tick() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clock++
	return l.clock
}

// change records a limit change around the call that makes it: before the
// call, either value may be in force (the larger is recorded), after it the
// new one. lg is looked up under the lock.
func (l *soakLedger) change(lg func() *limitLog, v int, apply func() error) error {
	l.mu.Lock()
	l.clock++
	log := lg()
	old := log.last()
	log.set(l.clock, max(old, v))
	l.mu.Unlock()
	err := apply()
	l.mu.Lock()
	l.clock++
	if err != nil {
		v = old
	}
	log.set(l.clock, v)
	l.mu.Unlock()
	return err
}

// pause records a pause (on: 1 from after the call) or a resume (0 from
// before it) of the flag lg.
func (l *soakLedger) pause(lg func() *limitLog, on bool, apply func() error) error {
	if !on {
		l.mu.Lock()
		l.clock++
		lg().set(l.clock, 0)
		l.mu.Unlock()
		return apply()
	}
	err := apply()
	l.mu.Lock()
	l.clock++
	if err == nil {
		lg().set(l.clock, 1)
	}
	l.mu.Unlock()
	return err
}

func (l *soakLedger) start(r *soakRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clock++
	l.running++
	r.started = time.Now()
	l.live[r] = true
	l.byType[r.typ]++
	l.byTier[r.tier]++
	if r.urgent {
		l.urgentBy[r.tier]++
	}
	l.byKey[r.key]++
	l.peak = max(l.peak, l.running)
	var use [2]int // shared, exclusive
	if r.res != "" {
		use = l.byRes[r.res]
		if r.excl {
			use[1]++
		} else {
			use[0]++
		}
		l.byRes[r.res] = use
	}
	if _, dry := l.dry.span(r.from); dry == 1 {
		return // dry-run admitted something since: limits may be exceeded
	}
	if _, hi := l.capacity.span(r.from); l.running > hi {
		l.report("%d jobs hold seats, capacity at most %d since %s/%s was submitted", l.running, hi, r.typ, r.key)
	}
	if _, hi := l.typeLimit[r.typ].span(r.from); l.byType[r.typ] > hi {
		l.report("%d jobs of type %s run, its limit at most %d", l.byType[r.typ], r.typ, hi)
	}
	// Only a job that was not urgent bounds the tier: the argument above
	// needs the last non-urgent job admitted to be admitted no earlier than
	// this one, which holds only if this one is not urgent.
	if n, u := l.byTier[r.tier], l.urgentBy[r.tier]; !r.urgent && n-u > l.tierCap[r.tier] {
		l.report("%d jobs of tier %d run (%d of them possibly urgent), tier cap %d; this one %s of base priority %d, %v after its submission (urgent at the soonest after %v); in the ledger:\n%s",
			n, r.tier, u, l.tierCap[r.tier], r.typ, r.prio, time.Since(r.first), l.urgentIn(r.prio), l.describeTier(r.tier))
	}
	keyMax := l.defaultKey
	if lg := l.keyLimit[r.key]; lg != nil {
		_, keyMax = lg.span(r.from)
	}
	if l.byKey[r.key] > keyMax {
		l.report("%d jobs of key %.40q run, MaxInFlight at most %d", l.byKey[r.key], r.key, keyMax)
	}
	if r.res != "" && ((r.excl && use[0]+use[1] > 1) || (!r.excl && use[1] > 0)) {
		l.report("resource %s: %d shared and %d exclusive jobs at once (%s just started)", r.res, use[0], use[1], r.typ)
	}
	if lo, _ := l.typePaused[r.typ].span(r.from); lo == 1 {
		l.report("a job of type %s started although its type was paused from its submission on", r.typ)
	}
	if lg := l.keyPaused[r.key]; lg != nil {
		if lo, _ := lg.span(r.from); lo == 1 {
			l.report("a job of key %q started although the key was paused from its submission on", r.key)
		}
	}
}

// describeTier lists the jobs of tier p in the ledger, and the scheduler's
// own view, for a violation's report. Called with l.mu held.
func (l *soakLedger) describeTier(p Priority) string {
	var b strings.Builder
	for r := range l.live {
		if r.tier == p {
			fmt.Fprintf(&b, "\t%v\n", r)
		}
	}
	if l.diag != nil {
		fmt.Fprintf(&b, "\tscheduler: %s", l.diag())
	}
	return b.String()
}

func (l *soakLedger) end(r *soakRun) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clock++
	l.running--
	delete(l.live, r)
	l.byType[r.typ]--
	l.byTier[r.tier]--
	if r.urgent {
		l.urgentBy[r.tier]--
	}
	if l.byKey[r.key]--; l.byKey[r.key] == 0 {
		delete(l.byKey, r.key)
	}
	if r.res != "" {
		use := l.byRes[r.res]
		if r.excl {
			use[1]--
		} else {
			use[0]--
		}
		l.byRes[r.res] = use
		if use == [2]int{} { // removed at zero, as byKey's: the soak draws fresh job IDs
			delete(l.byRes, r.res)
		}
	}
	return l.clock
}

// idle reports an error unless no job is in the ledger.
func (l *soakLedger) idle() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running != 0 || len(l.byKey) != 0 {
		return fmt.Errorf("%d jobs still hold seats (keys %v)", l.running, l.byKey)
	}
	return nil
}
