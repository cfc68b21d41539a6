package admission

import (
	"time"
)

// This file is a reference model of the dispatch order: a deliberately
// naive, obviously correct O(n) (per admission) reading of DESIGN.md §2-§5,
// ported from seeds/seed_sim.py and extended with weights, virtual time with
// memory, cost learning, aging, urgency, key caps, MinSeats and the queue
// bounds. It shares no code or state with the scheduler: it keeps a plain
// list of pending jobs and a plain list of running jobs and, at every
// dispatch, recomputes from scratch which pending job may start and which of
// those goes first. fuzz_test.go drives it side by side with the real
// scheduler.
//
// Interpretations of points DESIGN.md leaves open (each is also how
// admission/doc.go reads it):
//
//   - Aging ceiling: DESIGN §4 writes eff = min(aged, Max). Taken literally
//     that lowers a type whose base priority is above Max (foreground 6 with
//     Max 5 would run at 5). DESIGN also says aging only raises and that the
//     stored priority never changes, and doc.go resolves it as
//     eff = min(aged, max(Max, base)): Max bounds promotions, never the base.
//     The model follows doc.go; the fuzz configurations include a Max below
//     the foreground priority so the difference is exercised.
//   - Urgency compares the aged priority (before the ceiling) with Urgent,
//     as DESIGN §4 writes it.
//   - Push-out (DESIGN §5): the per-key MaxQueued bound is checked first (an
//     arrival over its own key's bound is turned away and pushes nobody out).
//     "Queued" counts jobs waiting in any way (also those held back by a
//     conflict), never running ones. Among several longest keys the one
//     that reached that length last gives up its job (lenStamp: each change
//     of a key's pending count to a non-zero count stamps the key, in the
//     order the scheduler makes them); "newest" is the latest arrival.
//   - Idle key state and cost estimates expire lazily (DESIGN §2): a key idle
//     for more than KeyTTL returns at V_sys like a new key; an estimate last
//     updated more than CostTTL ago is replaced by DefaultCost. Strictly more
//     than the TTL, as in the scheduler.
//   - Pause (criterion 5): a job of a paused type or key is not admissible,
//     and its aging clock stands still while it is paused: its aging start
//     moves later by the time it spent paused, and "arrival, oldest first"
//     compares aging starts. A key whose pause lifts is lifted to V_sys.
//
// Not modelled: pause deadlines, shared access, SubmitWith's options,
// MaxWait timeouts, Close, background jobs (Submit and
// their goroutines), eviction of key and cost state by MaxKeys and
// MaxCostEntries (the tests keep the defaults, far above what they use),
// identifier folding and retry hints.
//   - "Arrival, oldest first" then the arrival sequence number breaks every
//     remaining tie; the aging clock starts at enqueue.
//   - DESIGN §3 dispatches on arrival, release, cancel and reconfiguration;
//     the model dispatches after every operation (also after a cancel or a
//     turned-away arrival). The public API does not dispatch after a queued
//     waiter cancels or an arrival is turned away; the driver compares the
//     two, so a cancel that should have admitted someone would show up.

// mState is where a model job is.
type mState uint8

const (
	mQueued  mState = iota + 1 // waiting (in pending)
	mRunning                   // holding a seat (in running)
	mDone                      // finished, given back, cancelled or pushed out
)

// mJob is one job of the model.
type mJob struct {
	id    int // the driver's name for it
	seq   uint64
	typ   JobType
	cfg   JobTypeConfig
	key   string
	jobID string
	enq   time.Time
	state mState

	agingStart time.Time // enq, moved later by the time spent paused
	frozenAt   time.Time // while its type or key is paused; zero otherwise

	// Set at admission.
	est    float64
	tag    float64
	eff    Priority
	urgent bool
}

// mKey is the model's state of one fairness key. Whether it is active is not
// stored: a key is active iff it has a pending or running job.
type mKey struct {
	v         float64
	idleSince time.Time
}

type mCostKey struct {
	typ JobType
	id  string
}

type mCost struct {
	est float64
	at  time.Time
}

// mEvent is something a dispatch or an arrival did to a job: "admit" (with
// the effective priority and urgency it was admitted at) or "pushout".
type mEvent struct {
	Kind   string
	ID     int
	Eff    Priority
	Urgent bool
}

// model is the reference model. Its fields are the configuration with every
// default applied independently of Config.validate.
type model struct {
	capacity   int
	tierLimits map[Priority]int
	aging      *AgingConfig // nil = off; Step defaulted
	keyPol     map[string]KeyPolicy
	defKey     KeyPolicy
	maxQueue   int
	alpha      float64
	keyTTL     time.Duration
	costTTL    time.Duration
	types      map[JobType]JobTypeConfig

	jobs    map[int]*mJob
	pending []*mJob // arrival order
	running []*mJob // admission order
	keys    map[string]*mKey
	costs   map[mCostKey]*mCost
	vsys    float64
	seq     uint64

	lenStamp map[string]uint64 // when the key's pending count last changed
	lenSeq   uint64

	pausedTypes map[JobType]bool
	pausedKeys  map[string]bool
}

func newModel(cfg Config, types map[JobType]JobTypeConfig) *model {
	m := &model{
		capacity:   cfg.Capacity,
		tierLimits: cfg.TierLimits,
		keyPol:     cfg.Keys,
		defKey:     cfg.DefaultKey,
		maxQueue:   cfg.MaxQueue,
		alpha:      cfg.CostAlpha,
		keyTTL:     cfg.KeyTTL,
		costTTL:    cfg.CostTTL,
		types:      map[JobType]JobTypeConfig{},
		jobs:       map[int]*mJob{},
		keys:       map[string]*mKey{},
		costs:      map[mCostKey]*mCost{},
		lenStamp:   map[string]uint64{},

		pausedTypes: map[JobType]bool{},
		pausedKeys:  map[string]bool{},
	}
	if cfg.Aging != nil {
		a := *cfg.Aging
		if a.Step == 0 {
			a.Step = 1
		}
		m.aging = &a
	}
	if m.maxQueue == 0 {
		m.maxQueue = DefaultMaxQueue
	}
	if m.alpha == 0 {
		m.alpha = 0.3
	}
	if m.keyTTL == 0 {
		m.keyTTL = 10 * time.Minute
	}
	if m.costTTL == 0 {
		m.costTTL = 24 * time.Hour
	}
	for name, c := range types {
		if c.DefaultCost == 0 {
			c.DefaultCost = time.Second
		}
		m.types[name] = c
	}
	return m
}

// --- configuration lookups -------------------------------------------------

func (m *model) policy(key string) KeyPolicy {
	if p, ok := m.keyPol[key]; ok {
		return p
	}
	return m.defKey
}

func (m *model) weight(key string) float64 {
	if w := m.policy(key).Weight; w != 0 {
		return w
	}
	return 1
}

func (m *model) tierCap(p Priority) int {
	if n, ok := m.tierLimits[p]; ok {
		return n
	}
	return int(p)
}

// --- counting ---------------------------------------------------------------

func (m *model) pendingOf(key string) int {
	n := 0
	for _, j := range m.pending {
		if j.key == key {
			n++
		}
	}
	return n
}

func (m *model) runningOf(key string) int {
	n := 0
	for _, j := range m.running {
		if j.key == key {
			n++
		}
	}
	return n
}

func (m *model) busy(key string) bool { return m.pendingOf(key)+m.runningOf(key) > 0 }

func remove(list []*mJob, j *mJob) []*mJob {
	for i, x := range list {
		if x == j {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	panic("model: job not in list")
}

// --- aging (DESIGN §4) ------------------------------------------------------

// rank is the effective priority and urgency of j at now.
func (m *model) rank(j *mJob, now time.Time) (eff Priority, urgent bool) {
	base := j.cfg.Priority
	a := m.aging
	if a == nil || j.cfg.NoAging {
		return base, false
	}
	if !j.frozenAt.IsZero() {
		now = j.frozenAt // the clock stands still while paused
	}
	wait := now.Sub(j.agingStart)
	promotions := 0
	if wait >= a.Grace {
		promotions = int((wait - a.Grace) / a.Interval)
	}
	aged := base + a.Step*Priority(promotions)
	eff = aged
	if a.Max > 0 {
		eff = min(aged, max(a.Max, base)) // see the file comment
	}
	return eff, a.Urgent > 0 && aged >= a.Urgent
}

// older: earliest aging start, then lowest sequence number.
func older(a, b *mJob) bool {
	if !a.agingStart.Equal(b.agingStart) {
		return a.agingStart.Before(b.agingStart)
	}
	return a.seq < b.seq
}

// before is the DESIGN §3 order: urgent first (oldest first), effective
// priority (highest first), keys below MinSeats first, V_k (lowest first),
// arrival (oldest first), arrival sequence.
func (m *model) before(a, b *mJob, now time.Time) bool {
	ea, ua := m.rank(a, now)
	eb, ub := m.rank(b, now)
	if ua != ub {
		return ua
	}
	if ua {
		return older(a, b)
	}
	if ea != eb {
		return ea > eb
	}
	ma := m.runningOf(a.key) < m.policy(a.key).MinSeats
	mb := m.runningOf(b.key) < m.policy(b.key).MinSeats
	if ma != mb {
		return ma
	}
	if va, vb := m.keys[a.key].v, m.keys[b.key].v; va != vb {
		return va < vb
	}
	return older(a, b)
}

// conflicts: same non-empty group and same job ID.
func conflicts(a, b *mJob) bool {
	return a.cfg.ConflictGroup != "" && a.cfg.ConflictGroup == b.cfg.ConflictGroup && a.jobID == b.jobID
}

// blockedBy says which of the DESIGN §3 criteria holds j back ("" = none),
// in the precedence Snapshot documents: conflict, key cap, type cap, tier
// cap. Capacity is not a property of the job and is not reported.
func (m *model) blockedBy(j *mJob, now time.Time) string {
	for _, r := range m.running {
		if conflicts(j, r) {
			return "conflict"
		}
	}
	if m.pausedTypes[j.typ] || m.pausedKeys[j.key] {
		return "paused"
	}
	if c := m.policy(j.key).MaxInFlight; c > 0 && m.runningOf(j.key) >= c {
		return "key cap"
	}
	if c := j.cfg.MaxConcurrency; c > 0 {
		n := 0
		for _, r := range m.running {
			if r.typ == j.typ {
				n++
			}
		}
		if n >= c {
			return "type cap"
		}
	}
	if _, urgent := m.rank(j, now); !urgent {
		n := 0
		for _, r := range m.running {
			if r.cfg.Priority == j.cfg.Priority {
				n++
			}
		}
		if n >= m.tierCap(j.cfg.Priority) {
			return "tier cap"
		}
	}
	return ""
}

// behindFlowMate reports whether an older pending job of j's key and type
// conflicts with j.
func (m *model) behindFlowMate(j *mJob) bool {
	for _, o := range m.pending {
		if o != j && o.key == j.key && o.typ == j.typ && conflicts(o, j) && older(o, j) {
			return true
		}
	}
	return false
}

// admissible: the six criteria of DESIGN §3.
func (m *model) admissible(j *mJob, now time.Time) bool {
	return len(m.running) < m.capacity && m.blockedBy(j, now) == ""
}

// --- virtual time and cost (DESIGN §2, §1) ----------------------------------

func (m *model) advanceVsys() {
	if len(m.running) == 0 {
		return
	}
	least := m.running[0].tag
	for _, r := range m.running[1:] {
		least = min(least, r.tag)
	}
	m.vsys = max(m.vsys, least)
}

func (m *model) estimate(j *mJob, now time.Time) float64 {
	c := m.costs[mCostKey{j.typ, j.jobID}]
	if c == nil || now.Sub(c.at) > m.costTTL {
		return j.cfg.DefaultCost.Seconds()
	}
	return c.est
}

func (m *model) learn(j *mJob, observed float64, now time.Time) {
	k := mCostKey{j.typ, j.jobID}
	c := m.costs[k]
	if c == nil {
		c = &mCost{est: j.cfg.DefaultCost.Seconds(), at: now}
		m.costs[k] = c
	}
	prev := c.est
	if now.Sub(c.at) > m.costTTL {
		prev = j.cfg.DefaultCost.Seconds()
	}
	c.est = m.alpha*observed + (1-m.alpha)*prev
	c.at = now
}

// activate lifts a key that goes from idle to active to V_sys; a new key, or
// one idle for longer than KeyTTL (forgotten), starts at V_sys.
func (m *model) activate(key string, now time.Time) {
	if m.busy(key) {
		return
	}
	k := m.keys[key]
	switch {
	case k == nil:
		m.keys[key] = &mKey{v: m.vsys}
	case now.Sub(k.idleSince) > m.keyTTL:
		k.v = m.vsys
	default:
		k.v = max(k.v, m.vsys)
	}
}

// maybeIdle records when key went idle.
func (m *model) maybeIdle(key string, now time.Time) {
	if !m.busy(key) {
		m.keys[key].idleSince = now
	}
}

// --- operations ---------------------------------------------------------------

// arrive queues job id, applying the queue bounds of DESIGN §5. It returns
// the pushed-out victim (if any) and whether the arrival was turned away.
// The caller dispatches afterwards.
func (m *model) arrive(id int, typ JobType, key, jobID string, now time.Time) (events []mEvent, rejected bool) {
	cfg, ok := m.types[typ]
	if !ok {
		panic("model: unknown type " + string(typ))
	}
	mine := m.pendingOf(key)
	if c := m.policy(key).MaxQueued; c > 0 && mine >= c {
		return nil, true
	}
	if len(m.pending) >= m.maxQueue {
		longest, n := "", -1
		for _, j := range m.pending {
			c := m.pendingOf(j.key)
			if c > n || c == n && m.lenStamp[j.key] > m.lenStamp[longest] {
				longest, n = j.key, c
			}
		}
		if n <= mine {
			return nil, true
		}
		var victim *mJob
		for _, j := range m.pending {
			if j.key == longest && (victim == nil || j.seq > victim.seq) {
				victim = j
			}
		}
		m.pending = remove(m.pending, victim)
		m.lengthChanged(victim.key)
		victim.state = mDone
		m.maybeIdle(victim.key, now)
		events = append(events, mEvent{Kind: "pushout", ID: victim.id})
	}
	m.activate(key, now)
	m.seq++
	j := &mJob{id: id, seq: m.seq, typ: typ, cfg: cfg, key: key, jobID: jobID, enq: now, state: mQueued, agingStart: now}
	if m.pausedTypes[typ] || m.pausedKeys[key] {
		j.frozenAt = now
	}
	m.jobs[id] = j
	m.pending = append(m.pending, j)
	m.lengthChanged(key)
	return events, false
}

// dispatch admits admissible jobs in DESIGN §3 order until none is left:
// each round recomputes admissibility and the order of every pending job and
// admits the first (the least by before).
func (m *model) dispatch(now time.Time) []mEvent {
	var events []mEvent
	for {
		var best *mJob
		for _, j := range m.pending {
			if m.admissible(j, now) && (best == nil || m.before(j, best, now)) {
				best = j
			}
		}
		if best == nil {
			return events
		}
		m.admit(best, now)
		events = append(events, mEvent{Kind: "admit", ID: best.id, Eff: best.eff, Urgent: best.urgent})
	}
}

func (m *model) admit(j *mJob, now time.Time) {
	j.eff, j.urgent = m.rank(j, now)
	j.est = m.estimate(j, now)
	k := m.keys[j.key]
	j.tag = k.v
	k.v += j.est / m.weight(j.key)
	m.pending = remove(m.pending, j)
	m.lengthChanged(j.key)
	m.running = append(m.running, j)
	j.state = mRunning
	m.advanceVsys()
}

// finish ends running job id: observed is charged against the estimate and,
// if learn, fed to the cost EMA (a give-back passes 0 and false: a full
// refund). The caller dispatches afterwards.
func (m *model) finish(id int, observed time.Duration, learn bool, now time.Time) {
	j := m.jobs[id]
	if j == nil || j.state != mRunning {
		panic("model: finish of a job that is not running")
	}
	m.running = remove(m.running, j)
	j.state = mDone
	m.advanceVsys()
	obs := observed.Seconds()
	m.keys[j.key].v += (obs - j.est) / m.weight(j.key)
	if learn {
		m.learn(j, obs, now)
	}
	m.maybeIdle(j.key, now)
}

// cancel takes pending job id out of the queue. The caller dispatches.
func (m *model) cancel(id int, now time.Time) {
	j := m.jobs[id]
	if j == nil || j.state != mQueued {
		panic("model: cancel of a job that is not queued")
	}
	m.pending = remove(m.pending, j)
	m.lengthChanged(j.key)
	j.state = mDone
	m.maybeIdle(j.key, now)
}

// lengthChanged stamps key after its pending count changed, if it has
// pending jobs (the push-out tie-break).
func (m *model) lengthChanged(key string) {
	if m.pendingOf(key) > 0 {
		m.lenSeq++
		m.lenStamp[key] = m.lenSeq
	}
}

// order returns every pending job in dispatch order at now, admissible or
// not (what Snapshot.Queue shows).
func (m *model) order(now time.Time) []*mJob {
	out := append([]*mJob(nil), m.pending...)
	// Insertion sort: n is small and the order is total.
	for i := 1; i < len(out); i++ {
		for k := i; k > 0 && m.before(out[k], out[k-1], now); k-- {
			out[k], out[k-1] = out[k-1], out[k]
		}
	}
	return out
}

// pause sets whether a type (typ != "") or a key is paused, then freezes or
// thaws the clocks of the pending jobs that changes. The caller dispatches.
func (m *model) pause(typ JobType, key string, paused bool, now time.Time) {
	if typ != "" {
		m.pausedTypes[typ] = paused
	} else {
		was := m.pausedKeys[key]
		m.pausedKeys[key] = paused
		if was && !paused && m.keys[key] != nil {
			m.keys[key].v = max(m.keys[key].v, m.vsys)
		}
	}
	for _, j := range m.pending {
		frozen := m.pausedTypes[j.typ] || m.pausedKeys[j.key]
		switch {
		case frozen && j.frozenAt.IsZero():
			j.frozenAt = now
		case !frozen && !j.frozenAt.IsZero():
			j.agingStart = j.agingStart.Add(now.Sub(j.frozenAt))
			j.frozenAt = time.Time{}
		}
	}
}
