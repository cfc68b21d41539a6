package admission

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the OpenTelemetry instrumentation scope of the scheduler's
// tracer and meter.
const ScopeName = "github.com/fairseat/fairseat/admission"

// Span and span event names.
const (
	spanWait      = "fairseat.admission.wait"
	eventAdmitted = "fairseat.admitted"
	eventRejected = "fairseat.rejected"
)

// Attribute keys. fairseat.fairness_key and fairseat.job.id appear on spans
// only with WithSpanIdentifiers(true), and never on metrics.
const (
	attrType      = attribute.Key("fairseat.job.type")
	attrTier      = attribute.Key("fairseat.tier")
	attrResult    = attribute.Key("fairseat.result")
	attrKeySeries = attribute.Key("fairseat.key")
	attrBase      = attribute.Key("fairseat.priority.base")
	attrEffective = attribute.Key("fairseat.priority.effective")
	attrUrgent    = attribute.Key("fairseat.urgent")
	attrPromoted  = attribute.Key("fairseat.aging.promotions")
	attrQueueLen  = attribute.Key("fairseat.queue.length")
	attrWait      = attribute.Key("fairseat.wait")
	attrOutcome   = attribute.Key("fairseat.outcome")
	attrDryRun    = attribute.Key("fairseat.dry_run.would_wait") // dry-run: what would have held it back
	attrPerKey    = attribute.Key("fairseat.rejection.per_key")
	attrFairKey   = attribute.Key("fairseat.fairness_key")
	attrJobID     = attribute.Key("fairseat.job.id")
	attrReason    = attribute.Key("fairseat.reason")
)

// WithSpanIdentifiers puts raw fairness keys and job IDs on spans and span
// events (attributes fairseat.fairness_key and fairseat.job.id). They are
// off by default: a fairness key is often a client IP or a tenant, a job ID
// a repository name, and either may be personal data. Metrics never carry
// them whatever this option says.
func WithSpanIdentifiers(on bool) Option {
	return optionFunc(func(o *options) { o.spanIdentifiers = on })
}

// outcome is how a request or job left the queue; it is the fairseat.result
// attribute of the metrics and the fairseat.outcome attribute of spans.
type outcome uint8

const (
	resultAdmitted outcome = iota
	resultQueueFull
	resultWaitTimeout
	resultClosed
	resultCancelled
	resultFailed  // background: fn returned an error or panicked
	resultDropped // background: Close's context ended before it ran, or it was paused then
	resultDeadline
	resultSuperseded
	resultCoalesced // counted only: a coalesced submission never waits
	resultOverloaded
	numResults
)

var resultNames = [numResults]string{
	"admitted", "rejected_queue_full", "rejected_wait_timeout", "rejected_closed",
	"cancelled", "failed", "dropped", "rejected_deadline", "superseded", "coalesced",
	"rejected_overloaded",
}

// noSpan is the span of a wait nobody traces.
var noSpan trace.Span = tracenoop.Span{}

// isRejected reports whether err is a *RejectedError, without the
// allocation of errors.As on the hot path (the scheduler returns them
// unwrapped).
func isRejected(err error) bool {
	_, ok := err.(*RejectedError)
	return ok
}

// resultOf classifies the error that ended a wait (nil: admitted).
func resultOf(err error) outcome {
	switch {
	case err == nil:
		return resultAdmitted
	case errors.Is(err, ErrQueueFull):
		return resultQueueFull
	case errors.Is(err, ErrWaitTimeout):
		return resultWaitTimeout
	case errors.Is(err, ErrDeadlineTooSoon):
		return resultDeadline
	case errors.Is(err, ErrSuperseded):
		return resultSuperseded
	case errors.Is(err, ErrOverloaded):
		return resultOverloaded
	case isRejected(err): // ErrClosed at arrival or while queued
		return resultClosed
	case errors.Is(err, ErrClosed): // "dropped by Close"
		return resultDropped
	}
	return resultCancelled // the caller's context ended
}

// observer holds the scheduler's tracing, metrics and events. The fields
// above the first line and below the last never change after New; those
// between are guarded by Scheduler.mu. The fields every request uses (up
// to events' handler) come first, in two cache lines.
type observer struct {
	tracer   trace.Tracer
	spanIDs  bool
	waitHist metric.Float64Histogram
	prioHist metric.Int64Histogram
	keyNames []string // Config.Keys, sorted: the fair-share series

	// ---- guarded by Scheduler.mu ----

	// activeN and activeW are the number and total weight of active keys;
	// otherN and otherW those of the active keys not in Config.Keys, kept
	// only when Config.Keys is not empty (otherwise they are activeN and
	// activeW).
	activeN, otherN int
	activeW, otherW float64
	events          eventQueue // its handler never changes
	lastAlloc       []float64  // allocation last reported by an event, per series
	scratch         []share

	// ---- never change after newObserver ----
	reg    metric.Registration // the observable instruments' callback, or nil
	keyIdx map[string]int      // index of each in keyNames
}

// typeObs is a job type's precomputed attribute sets, and its learned-cost
// running sum. The sets never change after RegisterType; costSum and costN
// (the sum and number of the type's tracked cost estimates) are guarded by
// Scheduler.mu.
type typeObs struct {
	// An admission reads the first cache line: costSum to
	// waitOpts[resultAdmitted].
	costSum  float64
	costN    int
	prioOpts []metric.RecordOption             // type, tier
	waitOpts [numResults][]metric.RecordOption // type, tier, result
	attrs    attribute.Set                     // type, tier
	typeOpt  metric.ObserveOption              // type
}

// newObserver creates the tracer and the instruments. Instrument errors go
// to otel.Handle, as OpenTelemetry instrumentation does; a failed
// instrument is replaced by a no-op one.
func newObserver(s *Scheduler, o *options) *observer {
	ob := &observer{
		tracer:  o.tracerProvider.Tracer(ScopeName),
		spanIDs: o.spanIdentifiers,
		keyIdx:  make(map[string]int, len(s.policies)),
	}
	ob.events.handler = o.eventHandler
	for name := range s.policies {
		ob.keyNames = append(ob.keyNames, name)
	}
	slices.Sort(ob.keyNames)
	for i, name := range ob.keyNames {
		ob.keyIdx[name] = i
	}
	ob.lastAlloc = make([]float64, len(ob.keyNames)+1)

	m := o.meterProvider.Meter(ScopeName)
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	ob.waitHist, err = m.Float64Histogram("fairseat.queue.wait.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Time requests and jobs spent queued before they were admitted or rejected (0 for immediate decisions)."),
		metric.WithExplicitBucketBoundaries(0, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300))
	check(err)
	if ob.waitHist == nil || err != nil {
		ob.waitHist = noop.Float64Histogram{}
	}
	ob.prioHist, err = m.Int64Histogram("fairseat.priority.effective",
		metric.WithUnit("{priority}"),
		metric.WithDescription("Effective (aged) priority of requests and jobs at admission."))
	check(err)
	if ob.prioHist == nil || err != nil {
		ob.prioHist = noop.Int64Histogram{}
	}
	ins, err := newObservables(m)
	check(err)
	if err == nil {
		ob.reg, err = m.RegisterCallback(func(ctx context.Context, obs metric.Observer) error {
			return s.observe(ins, obs)
		}, ins.list()...)
		check(err)
	}
	if len(errs) > 0 {
		otel.Handle(errors.Join(errs...))
	}
	return ob
}

// newTypeObs precomputes a job type's attribute sets (RegisterType).
func (o *observer) newTypeObs(t JobType, c JobTypeConfig) *typeObs {
	to := &typeObs{attrs: attribute.NewSet(attrType.String(string(t)), attrTier.Int(int(c.Priority)))}
	to.prioOpts = []metric.RecordOption{metric.WithAttributeSet(to.attrs)}
	to.typeOpt = metric.WithAttributeSet(attribute.NewSet(attrType.String(string(t))))
	for r := range numResults {
		set := attribute.NewSet(attrType.String(string(t)), attrTier.Int(int(c.Priority)), attrResult.String(resultNames[r]))
		to.waitOpts[r] = []metric.RecordOption{metric.WithAttributeSet(set)}
	}
	return to
}

// seriesName is the fairseat.key value of fair-share series i.
func (o *observer) seriesName(i int) string {
	if i < len(o.keyNames) {
		return o.keyNames[i]
	}
	return otherSeries
}

// ---- foreground hooks (Acquire, outside the lock) ----

// arrived is called once per Acquire, after the locked section: it records
// an admission without wait, or a rejection at arrival. qlen is the queue
// length the request found; dry, in dry-run mode, what would have made it
// wait ("" if nothing).
func (s *Scheduler) arrived(ctx context.Context, t *typeState, j *job, key string, qlen int, dry string, admitted bool, err error) {
	switch {
	case admitted:
		s.obs.admittedAtOnce(ctx, j, key, qlen, dry)
	case err != nil:
		s.obs.rejectedAtArrival(ctx, t, j, key, qlen, err)
	}
}

// admittedAtOnce is the fast path: two histogram records, and a span event
// only when the caller's span is recording.
func (o *observer) admittedAtOnce(ctx context.Context, j *job, key string, qlen int, dry string) {
	to := j.typ.obs
	o.waitHist.Record(ctx, 0, to.waitOpts[resultAdmitted]...)
	o.prioHist.Record(ctx, int64(j.eff), to.prioOpts...)
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		attrs := []attribute.KeyValue{
			attrType.String(string(j.typ.name)), attrEffective.Int(int(j.eff)), attrQueueLen.Int(qlen),
		}
		if dry != "" {
			attrs = append(attrs, attrDryRun.String(dry))
		}
		sp.AddEvent(eventAdmitted, trace.WithAttributes(o.identifiers(attrs, key, j.jobID)...))
	}
}

func (o *observer) rejectedAtArrival(ctx context.Context, t *typeState, j *job, key string, qlen int, err error) {
	var rej *RejectedError
	if !errors.As(err, &rej) {
		return // not a request (unknown type): nothing was decided
	}
	r := resultOf(err)
	o.waitHist.Record(ctx, 0, t.obs.waitOpts[r]...)
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		attrs := []attribute.KeyValue{
			attrType.String(string(t.name)), attrOutcome.String(resultNames[r]),
			attrPerKey.Bool(rej.PerKey), attrQueueLen.Int(qlen),
		}
		sp.AddEvent(eventRejected, trace.WithAttributes(o.identifiers(attrs, key, j.jobID)...))
	}
}

// startWait starts the span of a request that waits, at its arrival. The
// span is made only under a recording span: a wait span follows its
// parent's sampling decision, and a request nobody traces costs no span
// (the global provider's delegating tracer allocates even when it has no
// SDK behind it).
func (s *Scheduler) startWait(ctx context.Context, j *job, key string, qlen int) trace.Span {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return noSpan
	}
	attrs := []attribute.KeyValue{
		attrType.String(string(j.typ.name)), attrBase.Int(int(j.prio)), attrQueueLen.Int(qlen),
	}
	_, sp := s.obs.tracer.Start(ctx, spanWait,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(time.Unix(0, j.enqueued)),
		trace.WithAttributes(s.obs.identifiers(attrs, key, j.jobID)...))
	return sp
}

// endWait records how a wait ended and ends its span. err is the wait's
// error (nil: admitted). j's fields are safe to read: an admission or
// rejection happened before the waiter was woken, a cancellation in the
// waiter's own locked section.
func (s *Scheduler) endWait(ctx context.Context, sp trace.Span, j *job, err error) {
	r := resultOf(err)
	to := j.typ.obs
	var now int64 // read only when needed: an admission knows its instant
	if r == resultAdmitted {
		now = j.started
		s.obs.prioHist.Record(ctx, int64(j.eff), to.prioOpts...)
	} else {
		now = s.now()
	}
	wait := time.Duration(now - j.enqueued)
	s.obs.waitHist.Record(ctx, wait.Seconds(), to.waitOpts[r]...)
	if !sp.IsRecording() {
		sp.End()
		return
	}
	sp.SetAttributes(attrOutcome.String(resultNames[r]), attrWait.Float64(wait.Seconds()))
	end := now
	if r == resultAdmitted {
		end = j.started
		sp.SetAttributes(attrEffective.Int(int(j.eff)), attrUrgent.Bool(j.urgent), attrPromoted.Int(j.promoted))
	}
	var rej *RejectedError
	if errors.As(err, &rej) {
		sp.SetAttributes(attrPerKey.Bool(rej.PerKey))
		sp.SetStatus(codes.Error, err.Error())
	}
	sp.End(trace.WithTimestamp(time.Unix(0, end)))
}

// identifiers appends the raw fairness key and job ID when the user opted in.
func (o *observer) identifiers(attrs []attribute.KeyValue, key, jobID string) []attribute.KeyValue {
	if o.spanIDs {
		attrs = append(attrs, attrFairKey.String(key), attrJobID.String(jobID))
	}
	return attrs
}

// ---- background hooks (outside the lock) ----

// submitted records a Submit rejected at arrival (t is nil for an unknown
// type).
func (s *Scheduler) submitted(t *typeState, err error) {
	if err == nil || t == nil {
		return
	}
	var rej *RejectedError
	if errors.As(err, &rej) {
		s.obs.waitHist.Record(context.Background(), 0, t.obs.waitOpts[resultOf(err)]...)
	}
}

// backgroundStarted records an admitted background job (runBackground).
func (s *Scheduler) backgroundStarted(j *job) {
	ctx, to := context.Background(), j.typ.obs
	s.obs.waitHist.Record(ctx, time.Duration(j.started-j.enqueued).Seconds(), to.waitOpts[resultAdmitted]...)
	s.obs.prioHist.Record(ctx, int64(j.eff), to.prioOpts...)
}

// backgroundDropped records a background job that left the queue without
// running: pushed out, expired, or dropped by Close (reportDropped).
func (s *Scheduler) backgroundDropped(j *job) {
	s.obs.waitHist.Record(context.Background(), sinceNs(s.now(), j.enqueued).Seconds(), j.typ.obs.waitOpts[resultOf(j.err)]...)
}

// ---- learned cost (under the lock) ----

// costAddedLocked counts a new cost entry of t (learnLocked).
func (s *Scheduler) costAddedLocked(t *typeState, e *costEntry) {
	t.obs.costSum += e.est
	t.obs.costN++
}

// costChangedLocked follows an entry's estimate from prev to e.est
// (learnLocked). counted is false for an entry the LRU evicted while its job
// ran (onCostEvicted zeroed its time); its time is zeroed again, so that
// another running job holding it does not count it either.
func (s *Scheduler) costChangedLocked(t *typeState, e *costEntry, prev float64, counted bool) {
	if !counted {
		e.at = 0
		return
	}
	t.obs.costSum += e.est - prev
}

// onCostEvicted is the cost LRU's eviction callback. It zeroes the entry's
// time, which marks it as no longer counted: the entry is now unreachable
// except from running jobs, whose observations are lost anyway
// (learnLocked), and an estimate with a zero time reads as expired.
func (s *Scheduler) onCostEvicted(k costKey, e *costEntry) {
	if t := s.types[k.typ]; t != nil {
		t.obs.costN--
		t.obs.costSum -= e.est
		if t.obs.costN == 0 {
			t.obs.costSum = 0
		}
	}
	e.at = 0
}

// ---- close ----

// stopObservability stops event delivery and the metric callback (Close).
func (s *Scheduler) stopObservability() {
	s.stopEvents()
	if s.obs.reg != nil {
		if err := s.obs.reg.Unregister(); err != nil {
			otel.Handle(err)
		}
	}
}
