package admission

import (
	"context"
	"time"

	"github.com/fairseat/fairseat/internal/lengths"
	"github.com/fairseat/fairseat/internal/ringheap"
)

// jobState is where a job is; every job moves forward through these states
// exactly once (queued and parked may alternate).
type jobState uint8

const (
	jobNew     jobState = iota // built, not yet enqueued
	jobQueued                  // in its flow's queue (flow.jobs)
	jobParked                  // waiting on a held resource (resource.waiters[flow])
	jobRunning                 // holds a seat (in Scheduler.running)
	jobDone                    // released, rejected, cancelled or dropped
)

// A Permit is a granted seat: hold it while the work runs and call Release
// exactly once when done, from any goroutine. A second Release panics. The
// zero value is not a permit; only Acquire makes them.
//
// A Permit is a small handle on the scheduler's job record: records of
// released permits are reused, and the generation tells a stale handle from
// the current holder, so a second Release is detected even after reuse.
type Permit struct {
	s   *Scheduler
	j   *job
	gen uint32
}

// job is one request or background job, from arrival until it ends.
//
// The fields that admitting and releasing a job read or write come first,
// so that they share as few cache lines as they can: with 100,000 queued
// jobs, the record of the job admitted is not in the cache, and each line
// it spans is a miss.
type job struct {
	typ   *typeState
	key   *keyState
	flow  *flow  // set while queued or parked
	jobID string // folded to MaxIdentifierLen
	seq   uint64 // arrival order; breaks every tie

	// Fields below change only under Scheduler.mu.
	idx int // where it is in the jobQueue (flow or waiters) or heap (running) holding it; -1 = none (see ringheap)
	// The flags and gen share one word.
	state      jobState
	urgent     bool // at admission
	ownPrio    bool // prio is an override: enqueue keeps it
	waiting    bool // the caller waits on ready
	xwaiting   bool // an exclusive job parked on its resource that has not started, left or frozen since: it holds new shared jobs back
	foreground bool
	probed     bool   // admitted while a probe of adaptive capacity had lowered the limit (probe.go)
	gen        uint32 // bumped when the record is reused
	load       int32  // seats in use just after its admission (adaptive capacity's reference load)

	prio     Priority   // base priority: the type's, or SubmitWith's override
	agingAt  int64      // the aging clock's start, Unix nanoseconds: arrival, moved later by the time spent paused
	est      float64    // seconds charged at admission
	cost     *costEntry // learned estimate of (type, job ID) found at admission, or nil
	res      *resource  // conflict-table entry held while running, or nil
	startTag float64    // S_j = V_k at admission
	prev     *job       // key's queued jobs, arrival order (prev is not kept at the head: see pushJob)
	next     *job       //
	// ready receives one token when a waiting foreground job is admitted or
	// rejected. It is buffered and kept when the record is reused, so a wait
	// allocates no channel; waiting says whether the caller is parked on it
	// (only then is a token sent, so none is ever left stale).
	ready    chan struct{}
	bg       *bgJob // background jobs only: nil for requests
	started  int64  // admission, Unix nanoseconds (as every instant below); 0 = not admitted
	enqueued int64  // arrival
	eff      Priority
	promoted int // aging promotions at admission

	// Rarely used.
	frozenAt int64              // when its type or key was paused while it was queued; 0 = not frozen
	err      error              // why the job ended without running
	invCost  float64            // ShortestFirst types: 1/estimated cost in seconds at arrival (enqueueLocked)
	cancel   context.CancelFunc // RunSync and background: cancelled at Close
}

// bgJob is what only background jobs carry, kept out of job so that the
// records of queued requests, the bulk of a large queue, stay small.
type bgJob struct {
	fn        func(context.Context) error // the work
	ctx       context.Context             // parent of fn's context (values only)
	ttl       time.Duration               // time allowed in the queue; 0 = no limit
	expiresAt int64                       // when it expires if still queued; 0 = never
	attempts  int                         // attempts that ran and failed
	timer     *time.Timer                 // TTL expiry while queued, retry backoff after a failure
}

// timer is j's background timer, or nil.
func (j *job) timer() *time.Timer {
	if j.bg == nil {
		return nil
	}
	return j.bg.timer
}

// jobQueue holds the queued jobs of a flow, or the jobs of one flow parked
// on one resource, in the flow's order (see ringheap.Queue). Its zero value
// is an empty queue.
type jobQueue = ringheap.Queue[jobKey, *job, jobOrder]

// jobOrder is a flow's order of its jobs (a ringheap.Order).
type jobOrder struct{}

func (jobOrder) Key(j *job) jobKey     { return jobOrderKey(j) }
func (jobOrder) Less(a, b jobKey) bool { return lessJobKey(a, b) }
func (jobOrder) Index(j *job) *int     { return &j.idx }

// jobKey orders the queued jobs of one flow: by age (aging start, then
// arrival) for FIFO types; for ShortestFirst types by Smith's rule with
// aging (see jobOrderKey).
type jobKey struct {
	at  int64 // agingAt, or for ShortestFirst the virtual start below
	seq uint64
}

func jobAgeKey(j *job) jobKey { return jobKey{j.agingAt, j.seq} }

// jobOrderKey is j's place in its flow. Smith's rule with aging prefers the
// job with the highest 1/r + a·wait (r its estimated cost in seconds, wait
// its age in seconds); since wait = now - start for every job, that is the
// order of start - 1/(a·r), lowest first, which does not change with time:
// a job's priority is that of a FIFO job that arrived 1/(a·r) seconds
// earlier. One int64 then serves both orders.
func jobOrderKey(j *job) jobKey {
	k := jobAgeKey(j)
	if a := j.typ.smithA; a > 0 {
		k.at -= int64(min(j.invCost/a, maxSmithShift) * 1e9)
	}
	return k
}

// maxSmithShift bounds 1/(a·r) in seconds (about 95 years), so that a tiny
// OrderAging cannot overflow the int64 key.
const maxSmithShift = 3e9

func lessJobKey(a, b jobKey) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// runKey orders running jobs by start tag (the least is V_sys's candidate).
type runKey struct {
	tag float64
	seq uint64
}

// runOrder orders running jobs by runKey (a ringheap.Order).
type runOrder struct{}

func (runOrder) Key(j *job) runKey { return runKey{j.startTag, j.seq} }
func (runOrder) Index(j *job) *int { return &j.idx }
func (runOrder) Less(a, b runKey) bool {
	if a.tag != b.tag {
		return a.tag < b.tag
	}
	return a.seq < b.seq
}

// flow is the queued work of one (fairness key, job type).
//
// Invariants:
//   - jobs holds the flow's queued (not parked) jobs; parked counts its jobs
//     parked on resources. The flow is in key.flows iff jobs.Len()+parked > 0.
//   - typIdx != -1 (the flow is in typ.flows) iff jobs.Len() > 0 and the key is
//     not capped; then urgent, eff, promoAt and the slot's sortKey describe
//     jobs.Top() and the key as of the last sync, and promoAt is either zero
//     or after the last dispatch.
//   - promoIdx != -1 (the flow is in Scheduler.promos) iff typIdx != -1 and
//     promoAt is not zero.
type flow struct {
	key  *keyState
	typ  *typeState
	prio Priority // base priority of all its jobs
	jobs jobQueue

	typIdx   int // its handle in typ.flows, or -1 (see ringheap.Dense)
	promoIdx int // where it is in Scheduler.promos, or -1

	// parked is int32 so that it and urgent share a word and a flow stays
	// within two cache lines (128 bytes; TestRecordSizes checks it): with
	// thousands of keys, the flow admitted from is not in the cache. A
	// queue never holds 2^31 jobs.
	parked  int32
	urgent  bool
	eff     Priority
	promoAt int64 // next instant the head's rank changes, Unix nanoseconds; 0 = never
}

// promoKey orders flows by the instant their head's rank next changes
// (promoAt, Unix nanoseconds), then the head's arrival: the shape of a
// jobKey, and its order.
type promoKey = jobKey

// promoOrder orders flows by promoKey (a ringheap.Order).
type promoOrder struct{}

func (promoOrder) Key(f *flow) promoKey    { return promoKey{f.promoAt, f.jobs.TopKey().seq} }
func (promoOrder) Index(f *flow) *int      { return &f.promoIdx }
func (promoOrder) Less(a, b promoKey) bool { return lessJobKey(a, b) }

// keyState is one fairness key.
//
// Invariants:
//   - active iff queued+running > 0; an active key is tracked in
//     Scheduler.keys; idlePos is keyTable's record of an idle one.
//   - queued == the length of the list head..tail == the number of its jobs
//     that are queued or parked; running == its jobs holding a seat.
//   - capped iff policy.MaxInFlight > 0 and running >= policy.MaxInFlight;
//     a held key (capped or paused) has its flows in no type's order.
//   - paused iff the key is in Scheduler.pausedKeys; then its queued jobs
//     are frozen (job.frozenAt set).
//   - byLen is its place in Scheduler.lengths, which has recorded queued.
type keyState struct {
	// An admission reads or writes nearly every field, so the record is
	// kept to 128 bytes: the allocator's 128-byte class is aligned to the
	// 64-byte cache line, and a key is two lines, where at 152 bytes it
	// was three (with 10,000 keys a key's state is not in the cache when
	// its job is admitted). structs_test.go checks the size.
	name    string
	policy  *KeyPolicy // &Scheduler.cfg.DefaultKey or an entry of Scheduler.policies; never changed in place
	w       float64    // policy weight, > 0
	v       float64    // V_k
	running int
	queued  int
	flows   []*flow // flows with queued or parked jobs, one per type

	head, tail *job           // queued and parked jobs in arrival order
	idleSince  int64          // an instant (see Scheduler.now)
	byLen      lengths.Handle // its place in Scheduler.lengths (queued as last recorded, its slot)
	idlePos    int32          // 1 + its entry in Scheduler.keys.idle while idle and tracked; 0 = none
	active     bool
	capped     bool
	paused     bool
	configured bool // named in Config.Keys: a fair-share series of its own (fairshare.go)
}

func (k *keyState) belowMin() bool { return k.running < k.policy.MinSeats }

// held reports whether none of k's jobs may start now (dispatch criteria 4
// and, for keys, 5).
func (k *keyState) held() bool { return k.capped || k.paused }

func (k *keyState) flowFor(t *typeState, prio Priority) *flow {
	for _, f := range k.flows {
		if f.typ == t && f.prio == prio {
			return f
		}
	}
	return nil
}

// pushJob appends j to k's list of queued and parked jobs.
//
// The list is doubly linked except at its head, whose prev is not kept: a
// job is told to be the head by k.head, never by its prev. Then taking the
// head off, the usual case (a key's oldest job admitted), writes only k
// and the job itself, not the job behind it, whose record is a cache miss
// when the queue is long. Only k.head..next is ever walked forwards and
// prev backwards from a job that is not the head.
func (k *keyState) pushJob(j *job) {
	j.prev, j.next = k.tail, nil
	if k.tail != nil {
		k.tail.next = j
	} else {
		k.head = j
	}
	k.tail = j
	k.queued++
}

// unlinkJob takes j out of k's list.
func (k *keyState) unlinkJob(j *job) {
	if k.head == j {
		k.head = j.next // j.next becomes the head: its prev is not kept
	} else {
		j.prev.next = j.next
		if j.next != nil {
			j.next.prev = j.prev
		}
	}
	if k.tail == j {
		if k.head == nil {
			k.tail = nil
		} else {
			k.tail = j.prev // j was not the head
		}
	}
	j.prev, j.next = nil, nil
	k.queued--
}

// typeState is one registered job type.
//
// Invariants: flows holds exactly the type's flows with typIdx != -1;
// readyIdx >= 0 (in Scheduler.ready) iff flows.Len() > 0; running and queued
// count the type's running and queued-or-parked jobs; paused iff pause !=
// nil, and then the type's queued jobs are frozen.
type typeState struct {
	// The fields a request reads or writes come first, then cfg, whose
	// first fields are the ones it reads: three cache lines.
	name            JobType
	tier            *tierState
	res             resourceTable // its conflict group's table (shared by the group's types); nil without a group
	limit           int           // running jobs allowed: cfg.MaxConcurrency until SetTypeLimit; 0 = no cap
	running, queued int
	paused          bool
	aging           *AgingConfig // Config.Aging, or nil when the type has NoAging
	obs             *typeObs     // attribute sets and cost sums of the metrics (otel.go)
	smithA          float64      // Order ShortestFirst: the aging factor a; 0 = FIFO
	readyIdx        int
	cfg             JobTypeConfig // as registered
	flows           flowQueue
	pause           *pause
}

// blocked reports whether nothing of this type may start now (criteria 2 and
// 5 of dispatch).
func (t *typeState) blocked() bool {
	return t.paused || (t.limit > 0 && t.running >= t.limit)
}

// tierState counts the jobs of one base priority.
type tierState struct {
	prio            Priority
	cap             int
	running, queued int
}

// resourceTable holds the conflict-table entries of one conflict group by
// job ID: jobs of the group with the same job ID conflict. Keying each
// group's table by the job ID alone makes a look-up hash one string (the
// runtime's fast path for string keys) instead of a (group, job ID) pair,
// and the group's table is found through the job's type, without a look-up.
type resourceTable map[string]*resource

// resource is a conflict-table entry.
//
// Invariants: holders is the number of running jobs on it, excl how many
// of them are exclusive (so excl > 0 means holders == 1, except in dry-run);
// waiters maps each flow with parked jobs on it
// to a non-empty heap of them, nwait their total; xwait counts the queued or
// parked exclusive jobs with xwaiting set. An idle entry (nothing held,
// parked or wanted) is kept for reuse, counted in Scheduler.idleRes, swept
// in bulk. For every flow in waiters whose access r is open to, the flow has
// a queued (ready) job on r — the one returned when r opened — so some job
// will take the resource or hand the turn on.
type resource struct {
	holders int
	excl    int
	waiters map[*flow]*jobQueue
	nwait   int
	xwait   int
}

// costKey and costEntry hold a learned cost estimate.
type costKey struct {
	typ JobType
	id  string
}

type costEntry struct {
	key costKey // its key in Scheduler.costs
	est float64 // seconds
	at  int64   // last observation, an instant (see Scheduler.now); 0 = evicted
	// logRef is the log of the seat time, in seconds, at the lowest
	// uncongested load seen (refLoad seats in use at admission; see
	// sampleLocked), or since the estimate left it behind (leftBehind):
	// adaptive capacity's reference for the inflation of the job
	// (inflation.go). refLoad 0 = none yet (a job holds at least its own
	// seat, so a real load is at least 1); kept only when Config.Adaptive
	// is set. The reference is a geometric mean, and kept as its log as
	// the controller's averages are: a sample's log inflation is then one
	// subtraction (see updateRef).
	logRef   float64
	refLoad  int32
	refEpoch uint32 // adaptive.epoch when the reference was last replaced: older, it may be stale or congested (see sampleLocked)
	// logLast is the log of the seat time, in seconds, of the last sample
	// of the job, at lastLoad seats in use (0 = none): the next at the same
	// load measures how seat times vary (adaptive.noteNoise).
	logLast  float64
	lastLoad int32
}
