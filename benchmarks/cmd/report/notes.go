package main

// notes is the fixed part of RESULTS.md: what each peer is, how it is
// configured and what the numbers do and do not say.
const notes = `
## Peers

All peers sit behind one interface, ` + "`peer.Limiter.Do(ctx, key, fn)`" + ` (see
` + "`peer/peer.go`" + ` for why it is callback-shaped), one adapter file each. None sheds
in these runs: every queue bound is raised far above what the harness
queues, so all of them wait.

- **channel** — a buffered channel of tokens: the floor. No keys.
- **semaphore** — ` + "`golang.org/x/sync/semaphore.Weighted`" + `, FIFO. No keys.
- **gcl-fixed** — ` + "`github.com/platinummonkey/go-concurrency-limits`" + ` v0.8.0:
  ` + "`limit.FixedLimit`" + ` in a ` + "`limiter.DefaultLimiter`" + ` with the simple strategy, made to
  wait by ` + "`limiter.QueueBlockingLimiter`" + ` (FIFO backlog; a waiter whose 1 s backlog
  timeout expires is enqueued again by the adapter). No keys. Its saturated
  numbers collapse from 16 goroutines on, with stalls of about 1 s: in
  ` + "`QueueBlockingListener.unblock`" + ` the seat is handed to the backlog's head with a
  non-blocking send on an unbuffered channel; if the waiter has pushed itself
  but not yet reached its ` + "`select`" + `, the send fails, the seat is given back with
  ` + "`OnIgnore`" + `, the element is already evicted, and the waiter sleeps until its backlog
  timeout (1 s) — a lost wakeup in the library, read from its source (v0.8.0).
- **gcl-partitioned** — the same with ` + "`strategy.LookupPartitionStrategy`" + `: one
  partition per key, each guaranteed ` + "`ceil(capacity × weight / Σ weights)`" + ` seats
  (at least 1). A partition below its guarantee may acquire even when the total is
  at the limit, so it can run more than Capacity at once (the capacity test checks
  its documented bound instead). Partitions must be known up front and each costs
  at least one seat, so it is left out of the saturated and key-growth rows
  (with 16 or 10,000 keys on 4 seats it would run up to 20 or 10,004 at once).
  Its "weight" is a reservation, not a share of contended seats.
- **apf-hand6 / apf-hand1** — Kubernetes API Priority and Fairness:
  ` + "`k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset`" + ` v0.37.2, one priority
  level built with ` + "`NewQueueSetFactory(eventclock.Real{})`" + `, ` + "`BeginConstruction`" + ` and
  ` + "`Complete(DispatchingConfig{ConcurrencyLimit: capacity})`" + `, 64 queues as in the
  suggested "system" and "node-high" levels, hand size 6 (their value) or 1, one
  seat per request (` + "`WorkEstimate{InitialSeats: 1}`" + `), the flow's hand chosen by a
  hash of the fairness key. The queue length limit is raised from 50 to 65,536 so
  that it waits rather than rejects. The gauges are no-ops; APF's global
  Prometheus metrics (` + "`metrics.AddReject`" + ` etc.) are live, as in an API server. APF
  has no per-flow weight (weights are shares between priority levels), so the
  weighted row is n/a.
- **fairseat** — ` + "`admission.New`" + ` / ` + "`RegisterType`" + ` / ` + "`Acquire`" + ` / ` + "`Permit.Release`" + `; one
  job type (priority 40, tier cap lifted to the capacity with ` + "`TierLimits`" + `, default
  cost 1 ms), ` + "`KeyPolicy.Weight`" + ` per key, ` + "`MaxQueue`" + ` and ` + "`MaxKeys`" + ` raised to 2^20.

## What the rows measure

- **uncontended**: one goroutine, a free seat, ` + "`Do`" + ` with a no-op fn.
- **saturated**: 4 seats; 4, 16 or 64 goroutines over 16 keys doing ` + "`Do`" + ` with a
  no-op fn as fast as they can; admissions/s.
- **N active keys**: 4 seats, N goroutines each with its own key, all looping on
  ` + "`Do`" + `: every admission is a dispatch among about N active keys (N − 4 queued).
  The channel and semaphore rows show what N goroutines cost by themselves.
- **12/4/2 flows**, **3:1 pair**, **flood**: closed loops in real time, described
  above. The shares are from one run each, so they carry a few percent of noise.
- **gRPC**: one no-op unary call at a time (` + "`google.protobuf.Empty`" + ` over a
  hand-written ` + "`grpc.ServiceDesc`" + `) over TCP on 127.0.0.1, with no interceptor, with
  each peer in a tiny unary interceptor (key = client IP) on 64 seats, and with
  fairseat's own ` + "`interceptors.UnaryServerInterceptor`" + ` (default key chain, one
  route). At this load the differences are within the run-to-run noise of a
  ~60 µs call; see INTERCEPTORS.md for a paired measurement of fairseat alone.
`
