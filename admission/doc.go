// Package admission is fairseat's request-admission scheduler: it decides
// which waiting request or background job gets the next free seat.
//
// Every unit of work — a foreground request admitted with [Scheduler.Acquire]
// or [Scheduler.RunSync], or a background job queued with [Scheduler.Submit] —
// goes through one queue and one dispatch. A job has a [JobType] (registered
// once with a [JobTypeConfig]), a job ID naming the resource it works on, and a
// fairness key naming the caller ("" for background work).
//
// # Seats, tiers, types, conflicts
//
// Config.Capacity seats exist in total; a running job holds one. Each job type
// has a base [Priority]; as in the Go seed, the value is also the concurrency
// cap of its tier (at most int(p) jobs of base priority p run at once), unless
// Config.TierLimits overrides it. A type's MaxConcurrency caps its own running
// jobs. Two jobs conflict when their types share a non-empty [ConflictGroup]
// and they have the same job ID; conflicting jobs never run at the same time,
// unless both types have Access [Shared]: shared jobs on one resource run
// together (many fetches of one repository), an [Exclusive] job runs alone on
// it (its repack), and an exclusive job that found the resource busy stops
// new shared jobs from overtaking it, so a stream of readers cannot starve a
// writer.
//
// # Virtual time: weighted fairness with memory
//
// Each fairness key k has a weight w_k (KeyPolicy.Weight, default 1) and a
// virtual time V_k, the weighted seconds of seat time it has consumed.
//
//	admission:   S_j = V_k;  V_k += est_j / w_k
//	completion:  V_k += (observed_j - est_j) / w_k;  feed observed_j to the EMA
//	V_sys      = max(V_sys, min{S_j : j running})   (never decreases)
//	activation:  V_k = max(V_k, V_sys)              (key goes idle -> active)
//
// est_j is the learned cost of (type, job ID): an exponential moving average
// est = α·observed + (1-α)·est seeded with the type's DefaultCost,
// α = Config.CostAlpha (0.3). A key that was idle gets no credit for the time
// it was away (activation lifts it to V_sys); a key that comes back with debt
// keeps it; a key that arrives while another is backlogged starts at V_sys,
// below the backlogged key, and is served first until it has caught up. That
// is how one client's 1000 clones cannot starve a client with two, and how a
// clone of linux.git (est 60 s) counts for twelve clones of a 5 s repository.
//
// Key state and cost estimates are bounded (MaxKeys, MaxCostEntries) and
// expire (KeyTTL, CostTTL); expiry is checked lazily against the clock, so
// no goroutine maintains them. Keys are least recently used first in the
// sense of their last use: only idle key state is ever forgotten, that of
// the key idle longest first (keyTable, in keys.go: a map, and the idle
// keys in the order they went idle). Activating a key or letting it go idle
// touches no other key, which at tens of thousands of keys is what keeps
// key activation from costing cache misses. A key with queued or running
// work is always tracked, even beyond MaxKeys, until it goes idle. A
// forgotten key that returns starts at V_sys, exactly as a new one does,
// so forgetting never grants credit. (DESIGN §2 puts key state in
// golang-lru's LRU map; the key table keeps its bound and its rule, the
// key unused longest is forgotten first, but orders only idle keys, by the
// time they went idle: the LRU's move to the front at every activation
// wrote two cold neighbours and took a second look-up, and it could reach
// an active key, which then had to be pinned aside. See
// benchmarks/ADMISSION.md, session 7.) Cost estimates live in an LRU map
// (golang-lru/v2's simplelru, used under the scheduler's one mutex), whose
// newest entry is also remembered outside it (Scheduler.costsFront): a
// request for the same type and job ID as the one before finds its
// estimate without hashing, and the LRU order is the same, since marking
// the newest entry used again moves nothing.
//
// # Dispatch
//
// Whenever a seat may have opened or work arrived, dispatch admits as many
// jobs as fit. A queued job is admissible when (1) a seat is free, (2) its
// type is below MaxConcurrency, (3) no running job conflicts with it, (4) its
// key is below MaxInFlight, (5) neither its type nor its key is paused and
// (6) its tier is below its cap, unless the job is urgent (and, with the
// optional pressure gate, (7) the server is not under pressure or the job's
// effective priority is above the gate's MinPriority). With queue-delay
// shedding on, a queued request it refuses leaves as it comes up (see
// Adaptive capacity). Among admissible jobs the order is
// urgent first (oldest first), then effective priority (highest first), then
// keys below their MinSeats, then V_k (lowest first), then arrival (oldest
// first); the sequence number assigned at enqueue breaks every remaining tie,
// so the order is total and reproducible.
//
// # Data structures
//
// The structures below are unexported, take no locks, and are used only under
// Scheduler.mu (see the field comments for their invariants; a test-only
// checkInvariantsLocked verifies them after every step of the table and fuzz
// tests). The generic ordered structures they are built from live in
// internal packages, each with its own doc and tests: internal/ringheap
// (the orderings), internal/lengths (push-out's buckets) and
// internal/freelist (records kept for reuse, so that the steady state
// allocates nothing but a request's Permit).
//
//   - flow: the queued jobs of one (fairness key, job type, base priority),
//     in a jobQueue ordered by (aging start, seq), or for an Order
//     ShortestFirst type by Smith's rule with aging (below). All jobs of a flow share V_k,
//     MinSeats status, base priority and an aging function that only grows
//     with age, so the flow's head is its best job: the scheduler never needs
//     to look past it. (A SubmitWith priority override makes a flow of its
//     own, which keeps this true.)
//   - typeState.flows: the type's flows that have a job ready, ordered by
//     the dispatch order of their heads. A flow's position changes only when
//     its head changes, its key's V_k or MinSeats status changes, or its head
//     is promoted by aging — each of those is one Fix.
//   - Scheduler.promos: flows whose head will be promoted in the future,
//     ordered by the promotion instant. Dispatch first re-ranks the flows whose
//     instant has passed, so effective priority is exact at every dispatch
//     without a timer per job or a periodic pass.
//   - These three orderings are a sorted ring for what arrives in order
//     and a 4-ary heap beside it for the rest (ringheap.Queue; the type's
//     flows a ringheap.Dense, below), the least
//     element the lesser of the two fronts. They are mostly in order: jobs
//     join their flow behind the jobs already there (only retries, whose
//     aging clock runs from their first submission, jobs back from a
//     resource they were parked on and ShortestFirst overtakes go to the
//     heap); the flow just served goes to V_k + est/w_k, behind the keys
//     served before it when jobs cost alike, so under one client's thousand
//     clones admission is O(1) instead of a sift through a heap of all
//     flows; heads are promoted one Interval after another. What is in
//     order costs O(1) and touches no other element; the rest costs a heap
//     operation. Completions break the order of flows: a key's V_k then
//     moves by what its job really took less its estimate, so with many
//     keys whose seat times vary, flows come back in no order and the
//     type's flows are a heap in practice (BenchmarkKeys, one job per key:
//     from 100 keys on, 99 % of arrivals enter the heap; see
//     benchmarks/ADMISSION.md, session 13). Scheduler.running, the running
//     jobs by start tag (for V_sys), is a ringheap.Heap alone.
//   - Scheduler.lengths: keys with queued jobs bucketed by their count, for
//     push-out (a lengths.Buckets; each key keeps its lengths.Handle).
//   - Blocked work waits where its blocker is. A job whose resource does not
//     admit it is parked on that resource (resource.waiters, one jobQueue
//     per flow) and holds no seat; when the resource opens to it, each waiting
//     flow's best job returns to its flow (and when a shared job starts, the
//     next of its flow returns, since the resource stays open to readers). A
//     key at MaxInFlight, or paused, takes all its flows out of the type
//     orderings until that changes. A type at MaxConcurrency or paused, and a
//     tier at its cap, are skipped whole, in O(1).
//   - Every ordering keeps each element's sort key in its slot, beside the
//     element: comparisons read contiguous memory, never the element (with
//     100,000 queued jobs, cache misses rather than comparisons set the
//     cost). The heaps are 4-ary, halving the depth a sift walks.
//   - The type's flows, one per active key, are the ordering that grows
//     with callers, and with thousands of them a flow's record is not in
//     the cache. So typeState.flows is a ringheap.Dense: a slot is 16
//     bytes, a flow's handle and its sort key abbreviated to 64 bits
//     (flowPrefix, in flowheap.go: urgency, effective priority, MinSeats
//     status and V_k, in that order, V_k to a relative 2^-34), four
//     children to a cache line; only slots whose abbreviations tie compare
//     the whole keys, which the Dense keeps by handle (they also name the
//     flow's head job, so that dispatch reaches it from there). A sift then
//     writes positions into the Dense's own array, never into a moved flow,
//     and reads one line of slots a level where whole keys took three or
//     four.
//   - An arrival when nothing at all is queued, if it may start, is the job
//     dispatch would pick; it takes its seat without entering these
//     structures (the uncontended case).
//
// One dispatch step therefore looks at the top flow of each job type with
// ready work (a small number fixed by configuration, not by load), and every
// change it makes is an O(1) ring operation or a heap operation: its cost
// grows at most with the logarithm of queued jobs and active keys.
// Releasing a contended resource costs one such operation per flow waiting
// on it (not per job).
//
// # Aging and urgency
//
// With Config.Aging set, a job that has waited w has
//
//	promotions = 0                          if w < Grace
//	           = floor((w - Grace)/Interval) otherwise
//	aged       = base + Step·promotions
//	effective  = min(aged, max(Max, base))  (no ceiling when Max == 0)
//	urgent     = Urgent > 0 && aged >= Urgent
//
// The stored priority never changes; the tier a job counts against is its base
// priority's. DESIGN.md writes the ceiling as min(aged, Max); taken literally
// that would demote a type whose base priority is above Max (a foreground
// type at 40 with Max 30, configured so that background work can age up to
// 30 but never reach foreground). Aging only ever raises a priority, so here
// Max bounds promotions and never the base. Urgency, like every rank, is evaluated at each dispatch
// (arrival, release, cancellation), never by a timer. Urgent jobs go before
// every other job, oldest first, and may
// exceed their tier cap and their key's fair share; capacity, type caps, key
// caps and conflicts still hold them back. Every Priority at or above Urgent
// would make a job urgent on arrival, so RegisterType rejects a type whose
// Priority is not below Aging.Urgent.
//
// DESIGN applies aging to every job. Urgent jobs go oldest first, across
// all callers and regardless of virtual time, so under a foreground flood
// the flood's oldest requests turn urgent and go before a light caller's:
// the demo measured a light client's p99 wait going from 26 ms to 7.3 s
// with Urgent set. Aging exists so that background work cannot starve;
// foreground requests are protected by fairness. So a type may opt out
// with JobTypeConfig.NoAging (its jobs keep their base priority, and it has
// no starvation bound), and a type that never ages may have a Priority at
// or above Urgent.
//
// Starvation bound: let n = ceil((Urgent - base)/Step). A queued job of base
// priority base is urgent after at most Grace + n·Interval in the queue
// ([Scheduler.StarvationBound]). From then on it precedes every non-urgent
// job, and among urgent jobs the older go first, so it is admitted at the
// first seat that opens for which no conflict, type cap, key cap or pause
// holds it back, once the urgent jobs older than it have been admitted. (If
// a seat is already free when the job turns urgent — its tier was at its cap —
// it is admitted at the next dispatch, at the latest when the next seat
// opens: the scheduler keeps no timer to notice the instant itself.)
//
// # Priority offsets
//
// A request may carry Request.PriorityOffset: its base priority is then its
// type's Priority moved by the offset, within the type's tier. The
// transports set it from the caller's criticality (package criticality):
// by default sheddable work two below the type, sheddable_plus one below,
// critical_plus one above. The job still counts against its type's tier,
// type cap and key, it only orders differently: under load the sheddable
// work of a type waits while the type's critical work goes first. Aging
// works from the moved priority, so the bound above still holds for it,
// with base the moved priority: a request two below its type is urgent
// after at most Grace + ceil((Urgent - base + 2)/Step)·Interval. Requests
// of one key and type with different offsets are different flows (a flow's
// jobs share their base priority).
//
// The offset is clamped, never refused: the moved priority stays strictly
// between the nearest registered priorities below and above the type's
// (an offset cannot lift sheddable background work onto foreground, or push
// foreground work into a background tier), and, for a type that ages,
// below Aging.Urgent (a request must not be urgent on arrival); where no
// tier bounds it, an offset moves a request at most 65536.
// [Scheduler.SubmitWith]'s WithPriority fails instead on a priority that crosses a
// tier, since its caller chose the value in code; an offset comes from a
// request, the tiers from the operator, and registering one more type must
// not make a server start failing requests. Where there is no room (a type
// at 40 next to one at 39), the offset moves the request less, or not at
// all. A request is not shed first for its offset: push-out picks its
// victim by queue length alone (see Queue limits).
//
// # Pausing
//
// [Scheduler.Pause] and [Scheduler.PauseKey] hold a job type or a fairness
// key, until Resume or a deadline. Its queued work keeps its place, and its
// clocks stand still: each job records when it froze, and when it thaws its
// aging start (and its TTL deadline) moves later by the time it was frozen,
// so time paused counts neither towards aging nor against a TTL; the queues
// that order by those clocks are rebuilt for the jobs that moved. One
// mechanism serves type pauses, key pauses and their overlap. The seats go
// to other work meanwhile. A key whose pause lifts is brought up to V_sys,
// like a key returning from idleness: it gets its share back, not a burst to
// catch up. Pausing costs O(queued jobs), once per operator action. Close
// does not lift pauses: paused background work is dropped (and reported) at
// Close.
//
// # Adaptive capacity
//
// With Config.Adaptive set, the capacity is not a guess of the operator's
// but a limit that follows what the server can do, between
// AdaptiveConfig.Min and Max. It is the capacity every other mechanism
// reads — dispatch, fair shares, retry hints, Snapshot — so nothing else
// changes. Tier caps and MaxConcurrency keep their meaning and do not scale
// with it: a cap above the limit does not bind, one below it still does (and
// keeps the seats from being used, so the limit stops growing there); give
// the foreground tier a TierLimits entry of at least Max. KeyPolicy.MinSeats
// must fit in Min.
//
// The controller is a signal (inflation.go), a control law (adaptive.go),
// probes that keep the signal sound (probe.go), and two optional inputs,
// pressure (pressure.go) and queue-delay shedding (shedding.go). It runs at
// each completion, with time as an argument: no timer, no goroutine. This
// section says what each part does and why. The comment on the function or
// constant named beside a rule says what it was measured to do, and
// benchmarks/ADMISSION.md (sessions 12 to 37) how each rule was found and
// what was tried instead.
//
// Signal (inflation.go). Seat time alone cannot tell congestion from
// heavier work: a mix that turns to linux.git clones takes longer per job on
// a server that is not congested at all. So each job is judged against its
// own reference, the seat time of its (type, job ID) at the lowest
// uncongested load seen, load being the seats in use at its admission. Its
// inflation is
//
//	x = observed / reference
//
// Only a completion at a load of at most limit/Tolerance (and at least
// Min), the reference ceiling (refCeilingLocked), takes or moves a
// reference: where the limit settles, that is the true capacity. Under the
// ceiling, a completion at a lower load than the reference's replaces it, one
// at the same load moves it by the cost EMA's alpha, and one at a higher
// load leaves it (updateRef), unless the job's own cost estimate has fallen
// well under the reference: load only slows a job, so the job got cheaper,
// and the completion takes the reference again (leftBehind). Above the
// ceiling a completion replaces the reference only if it ran at a lower load
// and faster (the reference was taken under more congestion than that), or
// at a lower load than a reference a probe has found stale (below). So a
// limit that falls, or oscillates above the true capacity, takes no
// references under congestion, which would make that congestion look
// normal.
//
// The learned cost estimate cannot serve as the reference: it follows the
// seat time under whatever congestion there is, so under steady congestion
// observed/estimate tends to 1 at any load. A job whose (type, job ID) has
// no reference yet gives no sample, nor does a seat handed back by a waiter
// that gave up. So a workload whose job IDs never repeat gives the
// controller nothing, and the limit stays where it is (pressure still
// lowers it); a route without job IDs has one reference per type, a
// raw-latency signal for that type. Under a flood every job is admitted
// at the limit, above the ceiling, so a job ID without a reference takes
// none (only the probes' jobs, at half the limit, do), and where the job
// IDs are many the controller sees few samples. This is a known limit: on
// benchmarks/adaptive's server (C = 16, a flood) with 10,000 repositories
// where the report has 100, the limit started at Min stayed at 9 to 14
// seats, for 58 to 80 % of a fixed C's work at 2.8 to 7.5 times its
// p99; started at 20, it hardly moved, costing 5 to 7 % of the work where
// the server thrashes (benchmarks/ADMISSION.md, session 39). With 1,000
// repositories from Min, 84 to 99 %. Where a route's job IDs are many and
// rarely repeat, start at or near the capacity you expect (Initial, or a
// CapacityStore), or use a fixed capacity. References live with the cost
// estimates and expire with them (CostTTL); a cost store does not save
// them, so after a restart each (type, job ID) takes its reference again
// (a CapacityStore saves the limit: "Warm restarts").
//
// Control law (adaptive.go, stepLocked), gradient-style as Gradient2, at
// each sample:
//
//	short     = geometric EMA of x over about one round (limit samples, at
//	            least eight: minShortSamples)
//	load      = EMA of the same samples' loads
//	baseline  = geometric EMA of x over samples at loads of at most
//	            limit/Tolerance^1.5 (baselineCeiling) and at or below their
//	            reference's load
//	base      = max(baseline, 1)                 (lawBase)
//	implied   = load · Tolerance · base / short
//	congested = short > Tolerance · base
//	target    = max(implied · e^se, limit / 2)   if congested (se: short's
//	                                             standard error, shortError)
//	          = limit + Headroom · sqrt(limit)   otherwise; at most implied if
//	                                             the sample's x > sqrt(Tolerance)
//	                                             · base, at least 1.5 · limit
//	                                             after a calm round
//	limit    += Smoothing / limit · (target - limit)
//	                                             only down when congested, only
//	                                             up otherwise
//
// A round is about limit samples, so a round moves the limit Smoothing of
// the way to target, and the limit settles where jobs take Tolerance times
// their references: on a server whose seat times are flat up to a capacity
// C and grow past it, at about Tolerance·C. The baseline is the inflation
// of jobs at loads the controller holds uncongested, with a little room to
// spare: noise, not congestion (1 where seat times do not vary), and the
// law is corrected for it. The law reads it as at least 1: a baseline under
// 1 is chance in its few samples, or references taken under congestion,
// which are the probes' to find (lawBase). The averages are geometric, kept
// as their logs (logMove): for a sound reference the log of a job's
// inflation varies about 0 however much seat times vary, where a plain mean
// of the ratios reads the noise as inflation.
//
// The other rules of the law, and why:
//   - implied is taken at the samples' own load, not at the limit, which
//     the samples trail by a round or so. Gradient2's target, the limit
//     times Tolerance·base/short, kept the limit growing for that round past
//     the point and then cut the overshot limit: a sawtooth above it.
//   - the headroom is added only while the server keeps up. Gradient2 adds
//     it always, as room for a queue inside its limit; fairseat's queue is
//     outside the limit, so under congestion the limit converges on the
//     point rather than sqrt(limit) above it. A sample inflated past the
//     noise (x over sqrt(Tolerance)·base) says the point is near, so it
//     grows the limit no further than implied.
//   - after a calm round (short no more than sqrt(Tolerance)·base for a
//     whole round, as just after a slow spell or from Min), the limit grows
//     as TCP's slow start does, by about a quarter a round (fastGrowth). A
//     whole round, since a few samples dip short for a moment.
//   - the limit grows only while it is used: when a sample ends, the seats
//     in use were at least UsedFraction of it, or work was queued. An idle
//     or lightly used server never inflates its limit (and then admits a
//     burst into a slow server).
//   - a sample more than Tolerance times faster than its reference, beyond
//     chance, measures a reference taken under congestion, not the server:
//     it stays out of the baseline and out of short (measuresRef). The jobs
//     a probe admitted stay out of short too: they ran at half the limit,
//     and would read as a server with room to spare just as the probe gives
//     the seats back.
//   - a congested step cuts only as far as short one standard error lower
//     implies (shortError), and no lower than a sound probe's floor
//     (setFloor, below); and no step grows a limit that is held (below).
//
// Probes (probe.go). The ceiling keeps references sound once the limit sits
// near Tolerance·C, but the limit starts wherever Initial puts it, and the
// references of jobs that all got dearer (a deploy) are too low at every
// load. So, as Envoy's adaptive concurrency filter re-measures its minimum
// latency, a probe halves the limit for one round of the jobs it admits (at
// least eight, minProbeSamples), whose references are taken at that lower
// load, and then restores it. The geometric mean inflation m of its jobs is
// its verdict:
//   - m under 1/sqrt(Tolerance): references taken under congestion (or
//     jobs that all got cheaper);
//   - m over sqrt(Tolerance): stale references (the jobs got dearer: they
//     are slow at half the load too);
//   - otherwise the references are sound.
//
// The bounds are sqrt(Tolerance), not Tolerance, because the limit settles
// at about Tolerance·r·C, r being the references' own inflation: held within
// sqrt(Tolerance), the limit stays under Tolerance^1.5·C, about 1.15·C. A
// verdict of stale or congested references needs its mean log beyond
// chance too, the standard error of the mean of the probe's n jobs
// (verdictZ; see noise, below), and starts an epoch: a reference taken
// before it is taken again by a completion at a lower load than its own,
// faster or not, and by any job a probe admits (sampleLocked). Under a
// flood every job is admitted above the ceiling, and otherwise only the
// probes' few jobs would take references again.
//
// When the next probe comes: five rounds after a stale or congested
// verdict, and after the first sound verdict that follows a stale one (a
// probe may draw only jobs whose references were already taken again);
// ProbeInterval rounds (1000 by default) after a second sound verdict in a
// row. Sooner, within five rounds:
//   - after a fall of the limit by a fifth since the last probe: the fall is
//     congestion or jobs that got dearer, and only a probe tells them apart
//     (the dearer jobs' references are taken again and the limit comes
//     back). If the probes had gone quiet and it finds the references
//     sound, the fall is congestion, and the limit may fall on to the
//     probe's limit without another probe (explainFall): a second probe
//     near the end of the fall halved the seats again while the server was
//     short of them.
//   - after a round for which the jobs at the limit ran faster than their
//     references, beyond Tolerance and beyond chance (noteFaster): the
//     references were taken under more congestion, or the jobs all got
//     cheaper, and the limit would climb on them until congestion made the
//     jobs as slow as their references had been. When that probe finds the
//     references congested, the limit is held, and does not grow until a
//     verdict that is not congested: the jobs read as calm only against the
//     references not yet taken again.
//   - at once, after a rise past 1.5 times the highest limit held before the
//     last probe, while the jobs at the limit run faster than their
//     references and the probes have been quiet for 20 rounds (noteRise):
//     where seat times vary, noteFaster waits for a round beyond chance,
//     and meanwhile calm rounds grow the limit past twice C. A limit that
//     comes back to where it was, as after a slow spell, brings none.
//
// The probes' clock counts every sample, used or not: a limit that grew
// stops where its seats are just short of used, and a clock of used samples
// stopped there too (stepLocked). Once the limit is steady, one round in
// about a thousand runs at half the limit. Snapshot's Adaptive.Probing
// tells probes apart, and Held says when the limit is held.
//
// A verdict does three things more:
//   - it re-anchors the baseline: when short, the inflation at the limit, is
//     at most Tolerance^1.5 times m, the inflation at half of it, the load
//     costs nothing and what inflation there is comes from the references,
//     so the baseline becomes m (anchors), first moved back towards the
//     baseline by what chance explains of the gap (beyondChance); but not
//     while the limit is held, when m is that of references about to be
//     taken again. The limit then stops falling on stale references while
//     the probes take them again.
//   - a sound verdict sets a floor: the server kept up at the probe's limit,
//     so a congested step cuts no lower than that, less a Tolerance; a step
//     the floor stops brings the next probe, and only its verdict takes the
//     limit lower or clears the floor (setFloor).
//   - the probe restores the limit it halved, unless it found the server
//     saturated well below it (restoreTo). It has measured the server at
//     two loads, the jobs at the limit (short, as it started) and its own
//     at half of it (m), against the same references, so their ratio holds
//     whatever those are worth: past C a job's seat time grows with the
//     load, so C is at most load·m/short. Where Tolerance times that,
//     raised by two standard errors of chance, lies below the limit, the
//     limit is restored only to there (never below the probe's own), and a
//     cut of more than a Tolerance holds it until the next probe, five
//     rounds on. Not where the law sees the congestion by itself (short over
//     Tolerance² times the baseline as the probe started, as just after the
//     capacity fell).
//
// Measured (adaptive_sim_test.go, C = 16, a flood, the limit from 10 s;
// benchmarks/ADAPTIVE.md compares it with fixed capacities and the peers):
//   - On a server whose seat time is base·max(1, running/C), fixed at the
//     job's start, the limit settles at Tolerance·C: by 8.7 s from Min,
//     at 18 seats (touching 19 in 4 and 13 runs of two batches of 1,500),
//     and by 5.1 s from 4·C, within 17 to 19 (touching 20 in 0 and 2).
//     It follows the capacity when it halves and when it
//     recovers (TestAdaptiveFollowsCapacity), and does not grow on an idle
//     server. When the mix turns from 10 % to 90 % heavy jobs it stays at
//     18, where a raw-latency gradient in the same test falls from 121 to 5
//     (TestAdaptiveMixShift).
//   - Where C is a few seats, one seat is a large share of it: the limit
//     alternates between C and C+1 seats, a mean of 1.34 to 1.43·C for
//     C = 2 and 1.22 to 1.25·C for C = 4, against 1.10 to 1.13·C from
//     C = 8 (medians of 20 runs). Where latency matters more than the last
//     seat's work, set Max to C or C+1, or use a fixed capacity. On a
//     server that thrashes past C, C+1 jobs do less than C: from Min, at
//     C = 2, the work done was 89 to 93 % of a fixed C's. A limit that
//     starts far above C comes down the more slowly the fewer the seats:
//     from 4·C it was within 1.5·C for good after a median of 3.5 s for
//     C = 16, 10 s for C = 4 and 19 s for C = 2, and from 20 at C = 2 the
//     probes took 3 to 10 % of two minutes' work. Under a flood every
//     job is admitted above the reference ceiling, so only the probes take
//     references for job IDs that have none, and a few seats give few
//     samples. There, start at or below C: Min (the default), or a
//     CapacityStore's saved limit. On a real CPU of 2 cores
//     (benchmarks/adaptive, TestWallClock), from Min the limit alternated
//     between 1 and 3 seats and did a fixed 2 seats' work at 1.01 to 1.05
//     times its p99; the peers did it at twice that p99, holding 19 to 24
//     seats (benchmarks/ADMISSION.md, session 39).
//   - On a server that does less in all past C, as one that thrashes does
//     (TestAdaptiveSettlesOnAThrashingServer), it settles the same way and
//     keeps 90 to 95 % of C's work, where a fixed capacity of 4·C does 53 %.
//
// A server that shares itself among its jobs at every instant, as a CPU or
// a disk does (simserver.NewShared: a job slows down as soon as others join
// it, not only when it starts under load), is where this design is weakest:
// a job's load is the seats in use just after its admission, which sets its
// seat time only where the server fixes it at the start. From a limit at or
// below C the two servers do not differ: from Min the limit settles at 18
// within 3.9 s (TestAdaptiveSettlesOnASharedServer), and
// benchmarks/ADAPTIVE.md's shared slow disk keeps 99.9 % of the best fixed
// capacity's goodput. From far above C, the Initial jobs admitted at once
// at New are counted at loads 1 to Initial while all of them run together,
// so those under the ceiling take references that are congested but read as
// taken at a low load; measuresRef, leftBehind, the epochs and restoreTo
// undo that. From 4·C the limit is within ±25 % of C after a median of
// 7.9 s, at a median of 19 seats from 10 s (60 runs, of which 1 still
// passes 1.25·C at times after 15 s). Where seat times vary as well
// (below), it settles higher, at about 1.5·C: medians of 23 to 25 seats
// from Min and from 1.25·C, 26 from 4·C, where 8 runs of 1,800 stayed
// above 60 seats (one above 90, the 96 jobs in flight). Counting a job's
// load over its run, or at its end, settles the shared server sooner but
// brings back dips below C on the server that fixes seat times at the
// start. So on such a server, start at or below the capacity you expect:
// Initial = Min (the default when Config.Capacity is not set), or the last
// steady limit.
//
// Noisy seat times. A real server's seat times vary from one job to the
// next, not only with the load. The controller estimates by how much
// (noteNoise): two successive samples of one (type, job ID) at the same
// load differ only by that. Snapshot's Adaptive.Noise is its standard
// deviation in log. The rules above allow for it where chance would
// otherwise decide (where times do not vary it is about 0, and the
// allowances change nothing): the averages are geometric; a faster sample
// measures its reference only two standard deviations beyond 1/Tolerance,
// and leaves short only once the noise estimate rests on 100 pairs
// (measuresRef, refChance, noiseKnown); a probe's verdict needs its mean
// beyond chance (verdictZ: with the bare bounds, at a log-normal spread of
// 0.5, most verdicts read chance as stale or congested references, and the
// probes that followed every five rounds cost 6.8 % of the goodput); short
// averages at least eight samples (minShortSamples); a congested step
// allows short one standard error (shortError); and noteFaster asks two.
//
// What noise still costs: the limit settles above Tolerance·C. With seat
// times spread log-normally by 0.5 (TestAdaptiveNoisyLevel, C = 16, 450
// runs) the limit has a median of 22.4 seats from Initial = 4·C and 22.0
// from Min (p10 to p90: 19.3 to 26.0), about 1.4·C, a level it follows
// when C halves. It does not settle but wanders: over an hour its 5-minute
// means ranged from 1.17 to 1.80·C, with no drift, as each probe draws the
// baseline anew. Where the server only slows down past C, that level costs
// latency: benchmarks/ADAPTIVE.md's noisy slow disk holds a mean of 20.1
// seats where the oracle holds 14.7, for 99.7 % of the best fixed
// capacity's goodput and 1.01 times its p99. Where the server thrashes as
// well, it costs goodput: in the noisy thrashing slow disk fairseat keeps
// 95.7 % of the best fixed capacity's goodput in the report's last run and
// 94.6 to 96.6 % in the three before it, the project's 95 % met or missed
// by the chance of the run, and ahead of every peer there by 6.6 to 38 %.
//
// The level rests on the baseline (1.1 to 1.2 there), which two things
// lift: its samples from loads between C and its ceiling, which is above C
// once the limit is, so that the baseline rises with the limit and every
// level above is close to self-consistent; and references that won a race
// (of several jobs of one (type, job ID) that run together, the first done
// takes the reference, having run fast by chance, and the others read slow
// against it). A run's level follows its baseline (a correlation of 0.86
// in log over 300 runs), which a few dozen samples, mostly a probe's jobs,
// set in its first seconds. The same chance brings, now and then, a dip: references
// taken above C read as congested once the limit falls, the baseline sinks
// with them, and the limit falls below C until a probe re-anchors it. The
// floor, beyondChance and lawBase bound the dips: over 400 runs of the
// noisy slow disk, 5 to 14 lose more than 0.5 % of the capacity-seconds to
// a limit below C, and 0 to 1 more than 1.5 %. Every way measured to lower
// the level (a lower ceiling on the baseline, a baseline fed from a sound
// probe's loads alone, references no race selects, a job's load read at its
// end) lowered it by one to three seats and brought the dips back: that
// trade is the open problem. TestAdaptiveNoisyLevel (adaptive_level_test.go,
// with -adaptive.level.runs=N) measures the level, the dips and the climb
// over N draws of that load.
//
// Pressure (pressure.go). With Config.Pressure set, each reading of its
// source (at most once per Pressure.Interval) of 1 or more multiplies the
// limit by PressureBackoff, and the limit does not grow meanwhile. (The gate
// still holds back work at or below Pressure.MinPriority at its Threshold.)
//
// Queue-delay shedding (shedding.go; QueueDelayTarget > 0), CoDel's idea as in
// Facebook's adaptive LIFO and CoDel: the scheduler keeps the smallest
// wait of the foreground requests admitted in each QueueDelayInterval of
// the keys holding (queued + running) at least their weighted share of all
// that is queued and running. (A key below its share is picked first at
// the next free seat whatever the queue, so its short wait says nothing of
// the standing queue; as FQ-CoDel keeps CoDel's state per flow, only the
// keys that may be shed count.) When an interval ends in which every one
// waited more than the target, a standing queue has formed: until an
// interval in which one did not, a key holding at least its share is
// refused with ErrOverloaded (a *RejectedError with PerKey false: 503 /
// Unavailable in the adapters) — its new foreground arrivals at once, and
// its queued requests that waited past the target when dispatch reaches
// them (CoDel drops at the head). So the backlog that formed before goes
// too and callers retry later, instead of every caller waiting behind it;
// keys below their share, the light callers, still queue and get in.
// Background work is never shed this way: it has TTLs and aging.
//
// Observability: every change of the limit is an [EventCapacityChanged]
// with its [CapacityReason], a count by reason in the
// fairseat.seats.limit.changes metric and an entry in a ring of the last
// CapacityHistory changes shown by Snapshot and the debug page;
// fairseat.seats.limit is the limit.
//
// Choosing the bounds, and what to watch:
//   - Max is the most the server can hold at all, whatever the controller
//     reads: what memory, file descriptors or a downstream's own limit allow
//     at once. The limit never passes it; a wrong signal can cost latency up
//     to Max, never more.
//   - Min is the floor a wrong signal cannot take the server below (pressure
//     cannot either): a few seats, at least the configured keys' MinSeats.
//   - Initial is where a new process starts, Config.Capacity if set, else
//     Min. References are not saved (see the signal above), so after a
//     restart the limit moves only once completions have taken some again:
//     start it where the last process had settled. A [CapacityStore]
//     ([FileCostStore] is one) does that by itself ("Warm restarts");
//     without one, the last steady value of fairseat.seats.limit is a good
//     Initial. Do not start far above the capacity you expect: on a server
//     that shares itself among its jobs, the limit takes seconds to come
//     down from there, and where seat times vary as well it may not ("A
//     server that shares itself", above).
//   - Snapshot's Adaptive (the debug page's "Adaptive capacity" line) says
//     what the controller reads. Inflation near Baseline (near 1 when
//     Baseline is under 1: lawBase) is a server that keeps up. Weak much
//     larger than Samples is a workload whose (type, job ID) pairs rarely
//     repeat: the controller has next to no signal and the limit stays
//     where it is (a job ID names a resource for conflicts too, so do not
//     coarsen it for the controller's sake); there a fixed capacity, or a
//     PressureSource, serves better. Noise is how much seat times vary by
//     themselves (the standard deviation of their log): near 0 the limit
//     settles at about Tolerance·C; at 0.5, well above it ("What noise
//     still costs", above). Held says the limit does not grow until a
//     probe says so: probes are taking again references slower than the
//     jobs now run (after the jobs all got cheaper, say), or the last probe
//     cut the limit by more than a Tolerance (restoreTo).
//   - fairseat.seats.limit.changes counts the changes by reason: increase
//     and decrease are the control law's, probe comes in pairs (halve,
//     restore) about every ProbeInterval rounds once the references are
//     sound and every five rounds while they are not or a probe's cut
//     holds, pressure is the PressureSource's, operator is
//     SetAdaptiveBounds'.
//   - In an incident, SetAdaptiveBounds(n, n) pins the capacity at n;
//     setting the old bounds again hands it back to the controller, from n.
//
// # Runtime control
//
// SetCapacity, SetTypeLimit, SetWeight, ResetWeights and SetKeyPolicy change
// limits and weights of a running scheduler and dispatch at once; lowering a
// limit never pre-empts running work. With adaptive capacity, SetCapacity
// is refused (the controller would overrule a number set by hand within a
// round); SetAdaptiveBounds moves the bounds instead, and equal bounds pin
// the capacity. SetDryRun (or Config.DryRun) computes
// and counts every decision but admits everything at once.
//
// # Background jobs
//
// [Scheduler.SubmitWith] queues background work with options: a TTL (the
// type's MaxWait by default; time paused does not count), a base priority
// within the type's tier, a fairness key. A type's DuplicatePolicy lets a
// queued job absorb (Coalesce) or be replaced by (Supersede) a new
// submission of the same job ID, and its RetryPolicy queues a job whose
// error is marked [Retryable] again after an exponential backoff, its aging
// clock continuing from the first submission.
//
// Smith's rule: for an Order ShortestFirst type, a key's queued jobs of the
// type go in the order of the highest 1/r + a·wait (r the learned cost in
// seconds). Since wait = now - start for all of them, that is the order of
// a·start - 1/r, which never changes with time: the flow's queue keeps it
// as a static key. A costly job is overtaken by a cheap one only if the cheap one
// arrived less than (1/r_cheap - 1/r_costly)/a seconds after it, which bounds
// its wait. The order between keys and types is unchanged.
//
// # Queue limits, timeouts, cancellation
//
// Config.MaxQueue bounds all queued jobs and KeyPolicy.MaxQueued each key's.
// When the whole queue is full, an arrival from a key with fewer queued jobs
// than the longest key pushes out that key's newest queued job (which fails
// with [ErrQueueFull]); otherwise the arrival fails with ErrQueueFull. A
// flooding client can never lock a light client out of the queue. When
// several keys share the longest length (DESIGN leaves the choice open),
// the one that reached it last gives way: a key that just grew is the one
// flooding. The keys are bucketed by queued count (internal/lengths), so
// finding the longest costs O(1) and a change touches no other key.
//
// With Config.DeadlineAware, a request that has to wait and whose context
// deadline ends before the earliest time it could start fails at once with
// [ErrDeadlineTooSoon] and a retry hint. The earliest start is a lower bound
// (the first running job's expected end, plus the work certainly ahead of it
// spread over all seats), so no request that could have made it is turned
// away.
//
// JobTypeConfig.MaxWait bounds the time in the queue ([ErrWaitTimeout]), and a
// caller's context always applies. A waiter whose context ends leaves the queue
// at once. If its seat was granted in the instant it gave up, the seat is
// given back — its key is not charged and nothing is learned from it — and
// dispatch runs again.
//
// # Early finish and correction
//
// The estimate charged at admission is corrected at completion, so a job that
// finishes early refunds its key and a job that overruns pays the rest. A job
// that panics still releases its seat: the panic propagates to RunSync and
// Acquire callers and is reported (logged, counted as failed) for Submit.
//
// # Closing
//
// Close stops admission: new calls fail with [ErrClosed], queued foreground
// requests fail with ErrClosed at once, and queued background jobs keep being
// dispatched until none is left or Close's context ends. Then the contexts of
// jobs still running under the scheduler (RunSync and Submit) are cancelled,
// background jobs that never ran are reported, and Close waits for every
// goroutine the scheduler started. Close waits for background work to finish
// before it cancels it — cancelling work just admitted from the queue it was
// asked to drain would waste it — which is how this package reads DESIGN §6.
//
// # Warm restarts
//
// Learned costs are what make fairness right (a clone of linux.git counts
// for twelve small ones), and a restart would forget them exactly when a
// deploy's reconnecting clients arrive. With [WithCostStore] they survive
// it (coststore.go):
//
//   - Load, in New, before it returns (so before the first admission),
//     under a context of [CostStoreTimeout]. A store that fails (or
//     panics) never fails New: the scheduler starts cold, logs a warning
//     with the WithLogger logger and counts it (Counters.CostLoadFailures).
//     No job type is registered yet in New, so every loaded estimate waits
//     aside, and becomes a learned cost when RegisterType registers its
//     type. An estimate is skipped (Counters.CostEntriesSkipped) if it is
//     invalid, older than CostTTL (at New, or by the time its type is
//     registered), a duplicate of a newer one, or beyond the
//     MaxCostEntries newest; and when its type is registered, if the cost
//     LRU is full by then: a loaded estimate never evicts one learned
//     since New. Estimates keep their observation time, so an estimate
//     that is never observed again still expires CostTTL after it was
//     learned, restarts or not.
//   - Save, from a timer (time.AfterFunc, made in New, re-armed after each
//     save, so two saves never overlap; its function runs in the timer's
//     goroutine, the scheduler starts none of its own) every interval, and
//     once more in Close, after the background drain, with Close's
//     context; Close first stops the timer and waits for a save it started
//     (cancelling it if Close's context ends), and no save starts after
//     Close begins, so the last save is Close's. Each save copies every
//     unexpired estimate (and those still aside, so that a type not
//     registered in one run keeps its estimates for the next) under the
//     lock, in O(estimates) and calling out to nothing, and hands the copy
//     to the store outside it. A failed save is logged and counted
//     (Counters.CostSaveFailures); the store keeps what it had. If Close's
//     context has ended by the time of its save (the drain used it up),
//     that save fails and the previous one stands.
//   - The adaptive limit (Config.Adaptive), if the store is a [CapacityStore]
//     too, as FileCostStore is: New loads it just after the estimates and
//     starts the limit there, within the bounds, instead of at
//     AdaptiveConfig.Initial; each save hands the store the limit in seats
//     (as it was before a running probe halved it). The loaded limit is
//     where the limit starts, not a change of it: no EventCapacityChanged
//     or History entry; Snapshot's CostStore.LoadedCapacity and the debug
//     page say it. A restarted server's
//     controller otherwise starts at Initial (by default Min) and with no
//     references: it climbs only as completions take some again, exactly
//     while a deploy's clients reconnect. On the simulated server of
//     adaptive_sim_test.go (C = 16, a flood), the first 5 s after a restart
//     from Min did a median of 15.8 seats of work with the saved limit
//     against 5.7 without, and where seat times vary (a log-normal spread of
//     0.5) 15.6 against 2.8 (TestAdaptiveRestart). Where the jobs had got
//     twice as dear across the restart, 16.3 against 1.9; where the server
//     had lost half its capacity (C = 8), the limit starts at 2.25·C and is
//     within 25 % of C after about 5 s (10 s on a server that shares itself
//     among its jobs), with 7.95 seats of work in the first 5 s against 3.9
//     (benchmarks/ADMISSION.md, session 38). The references themselves are
//     not saved: saved, they raised the first 5 s's work from Min too (11.9
//     seats against 7.1), but when the jobs had got dearer they read as
//     congestion, and the limit dipped for seconds until probes took them
//     again. Beside the saved limit they added under 1 % to the first 5 s's
//     work, and cost 14 % of it where the jobs had got dearer.
//
// [FileCostStore] keeps the estimates in one file (filecoststore.go),
// version 1, all integers big-endian:
//
//	offset  size  field
//	0       8     magic "FAIRCOST"
//	8       2     version: 1
//	10      2     flags: 0
//	12      4     entry count n
//	16      8     body length in bytes
//	24      body  n entries, each:
//	                uvarint length, job type (1 to 4096 bytes)
//	                uvarint length, job ID (0 to 4096 bytes)
//	                8 bytes estimate in seconds, IEEE 754 float64 (finite, >= 0)
//	                8 bytes last observation, Unix nanoseconds, int64
//	end     4     CRC-32C (Castagnoli) of every byte before it
//
// A reader accepts the file whole or not at all: a wrong magic, an unknown
// version or flags, a length that disagrees with the file's size, a
// checksum mismatch or an entry that does not parse makes Load fail with
// [ErrBadCostFile] and a message naming the problem (and New start cold).
// Load reads at most [MaxCostFileBytes] and [MaxCostFileEntries] entries,
// and allocates for the entries only once the checksum matched. Save
// writes the file beside its path (path+".tmp"), syncs it, renames it over
// the path and syncs the directory: a crash leaves the previous file or
// the new one, and the temporary file it may leave is ignored by Load and
// overwritten by the next Save. A missing file is a first start: no
// estimate, no error. The adaptive limit is in a second file,
// path+".capacity": the limit in decimal and a newline, written the same
// way; a missing one is no limit, and one that holds anything else makes
// LoadCapacity fail with ErrBadCostFile (and New start at Initial).
//
// # Observability
//
// The scheduler uses the OpenTelemetry API only; providers come from
// [WithTracerProvider] and [WithMeterProvider] (default: the globals), and
// the instrumentation scope is [ScopeName]. The program examples/otel in
// the repository wires it to the SDK and prints, through the SDK's stdout
// exporters, the spans and metrics of three requests (go run
// ./examples/otel).
//
// Tracing. A request that waits gets a child span, fairseat.admission.wait
// (SpanKindInternal), of the span in its context when that span is
// recording (the wait span follows its parent's sampling; an untraced
// request costs no span), from arrival to admission
// or rejection, with attributes fairseat.job.type, fairseat.priority.base,
// fairseat.queue.length (queued jobs at arrival), fairseat.wait (seconds),
// fairseat.outcome (admitted, rejected_queue_full, rejected_wait_timeout,
// rejected_closed, cancelled) and, when admitted,
// fairseat.priority.effective, fairseat.urgent and fairseat.aging.promotions;
// a rejected span has status Error and fairseat.rejection.per_key. A request
// admitted or rejected at arrival gets no span: a fairseat.admitted or
// fairseat.rejected event is added to the caller's span, only if that span
// is recording, so the uncontended path stays cheap. Fairness keys and job
// IDs may be personal data: they appear (fairseat.fairness_key,
// fairseat.job.id) only with [WithSpanIdentifiers](true).
//
// Metrics (never a raw key or job ID as an attribute; fairseat.key takes
// only names from Config.Keys, and "other"):
//
//	fairseat.queue.wait.duration  histogram, s: time queued, 0 for decisions at arrival;
//	                              job type, tier (base priority), result
//	fairseat.priority.effective   histogram, {priority}: at admission; job type, tier
//	fairseat.requests             counter, {request}: by result (the Counters: admitted,
//	                              rejected_*, cancelled, and for background failed, dropped)
//	fairseat.queue.size           up-down counter, {request}: queued; job type, tier
//	fairseat.running              up-down counter, {request}: holding a seat; job type, tier
//	fairseat.seats.usage, .limit  up-down counters, {seat}: seats in use, Capacity (the adaptive limit)
//	fairseat.seats.limit.changes  counter, {change}: adaptive limit changes; fairseat.reason
//	fairseat.aging.promotions     counter, {promotion}; fairseat.urgent.admissions, {request}
//	fairseat.key.allocation       gauge, {seat}: fair-share allocation (below); fairseat.key
//	fairseat.key.utilization      gauge, 1: running / allocation, active series only
//	fairseat.key.excess           gauge, {seat}: max(0, running - allocation)
//	fairseat.cost.estimate        gauge, s: mean of the type's tracked learned estimates
//	fairseat.events.dropped       counter, {event}: Counters.EventsDropped
//	fairseat.cost.store.estimates counter, {estimate}: WithCostStore estimates by
//	                              fairseat.cost.store.result: loaded, skipped, saved
//	fairseat.cost.store.saves     counter, {save}: successful saves
//	fairseat.cost.store.failures  counter, {operation}: failed loads and saves, by
//	                              fairseat.cost.store.operation: load, save
//	fairseat.cost.store.save.duration  gauge, s: the last save (copy and write)
//
// The two histograms are recorded outside the lock as requests are decided;
// everything else is read at collection time by one callback that copies
// O(job types + configured keys) values under the lock and observes them
// after releasing it. That callback is unregistered at Close.
//
// Fair share. Let A be the active keys (with queued or running work). The
// allocation of an active key k is Capacity·w_k / Σ_{a∈A} w_a seats, 0 for
// an idle key; the keys not named in Config.Keys form one series, "other",
// whose allocation is the sum of theirs and whose running count is the sum
// of theirs. A key running more than its allocation uses seats that idle or
// lighter keys leave free: that is its excess. Allocations describe what
// weighted fairness aims at; they do not drive dispatch (virtual time does).
//
// Events. [WithEventHandler] receives an [Event] for aged and urgent
// admissions, rejections, push-outs, background jobs that failed, expired
// or were dropped, and fair-share allocation changes, in order, from one
// goroutine the scheduler starts at the first event and stops in Close,
// behind a buffer of [EventBuffer] events; when the handler falls behind,
// events are dropped and counted, never waited for. Allocation events are
// emitted only when Config.Keys names keys, at the moments a configured key
// becomes active or idle and the first unconfigured key becomes active or
// the last one idle, for each series whose allocation then differs from
// the one last reported. A change caused only by the number of active
// unconfigured keys varying while some remain active is not reported (it
// would be an event per request); the fairseat.key.allocation gauge shows
// it. A weight change of an active key (SetWeight, ResetWeights,
// SetKeyPolicy) reports the series that moved, with reason
// AllocationWeightChange. The series are the keys in Config.Keys at New;
// keys given a policy later with SetKeyPolicy belong to "other".
//
// # Errors and panics
//
// Bad input is an error, never a panic or a hang (TestBadInput tries each):
//
//   - New, RegisterType and the setters (SetCapacity, SetTypeLimit,
//     SetWeight, SetKeyPolicy, SetAdaptiveBounds, Pause, PauseKey) and
//     NewRuntimePressure
//     return an error wrapping [ErrInvalidConfig] that names the field for
//     a zero, negative, NaN or infinite value where one is not allowed, a
//     MinSeats or priority that cannot fit, or a type registered again
//     with another config; an unregistered job type is [ErrUnknownJobType].
//     A failed call changes nothing.
//   - Acquire, RunSync and SubmitWith return ErrInvalidConfig for a nil
//     context or fn (or a bad SubmitOption), ErrUnknownJobType for an
//     unregistered type, and ctx.Err() for a context already done.
//     Fairness keys and job IDs of any length or bytes are accepted:
//     beyond MaxIdentifierLen they are folded to a digest.
//   - Nil Options and SubmitOptions are ignored; a nil logger, provider,
//     event handler or cost store means the default (none for the store),
//     and a negative WithCostStore interval is ErrInvalidConfig; a
//     FileCostStore whose path cannot be written fails its Saves, logged
//     and counted. WithTTL(0) keeps the type's MaxWait.
//     Close(nil) waits as Close(context.Background()) does, and a second
//     Close returns ErrClosed. ResumeKey of a key that is not paused, and
//     Resume of a type that is not, do nothing; StarvationBound of an
//     unknown type is NoStarvationBound.
//   - A PressureSource reading of NaN counts as no pressure.
//
// Panics are kept for programming errors: releasing a Permit twice (or a
// nil or zero Permit), DebugHandler(nil), and a nil or zero Scheduler,
// whose methods may panic (use New). A panic in RunSync's fn propagates to the
// caller after the seat is released; a panic in a background job is
// recovered and reported as [ErrJobPanicked]. A panic in an event handler
// is recovered and logged; a panic in a PressureSource is recovered, its
// reading counts as no pressure, and Counters.PressureFailures counts it
// (the source is read under the scheduler's lock, which must not stay held).
//
// # Concurrency and time
//
// The scheduler starts no goroutine except one per running background job
// and, when an event handler is set, the one that delivers events (timers it
// arms — pause deadlines, background TTLs and retry backoffs, the pressure
// gate's re-check, the cost store's saves — run their function in a
// goroutine when they fire; Close stops them and waits for any that has
// already begun, so no scheduler code runs after Close returns).
// Waiters park on their own channel, never on a mutex held across a wait.
// Decision functions take the current time as an argument and public methods
// read the clock once, so tests run under testing/synctest with fake time.
// A method reads it before it takes the lock, so its reading can be older
// than the instant of a section that took the lock first; lockAt
// (scheduler.go) moves it up to that instant, so time inside the scheduler
// never runs backwards (a thaw never moves an aging clock back, and no
// wait is negative).
package admission
