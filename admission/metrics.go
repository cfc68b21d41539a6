package admission

import (
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// observables are the instruments read at collection time, by one callback
// that copies what it needs under the scheduler's lock and observes after
// releasing it. Its cost is O(job types + configured keys).
type observables struct {
	requests      metric.Int64ObservableCounter       // fairseat.requests
	queued        metric.Int64ObservableUpDownCounter // fairseat.queue.size
	running       metric.Int64ObservableUpDownCounter // fairseat.running
	seatsUsage    metric.Int64ObservableUpDownCounter // fairseat.seats.usage
	seatsLimit    metric.Int64ObservableUpDownCounter // fairseat.seats.limit
	promotions    metric.Int64ObservableCounter       // fairseat.aging.promotions
	urgent        metric.Int64ObservableCounter       // fairseat.urgent.admissions
	allocation    metric.Float64ObservableGauge       // fairseat.key.allocation
	utilization   metric.Float64ObservableGauge       // fairseat.key.utilization
	excess        metric.Float64ObservableGauge       // fairseat.key.excess
	cost          metric.Float64ObservableGauge       // fairseat.cost.estimate
	eventsDropped metric.Int64ObservableCounter       // fairseat.events.dropped
	store         costStoreInstruments                // fairseat.cost.store.* (coststore_metrics.go)
	limitChanges  metric.Int64ObservableCounter       // fairseat.seats.limit.changes

	reasonOpts [len(capacityReasons)]metric.ObserveOption

	resultOpts [numResults]metric.ObserveOption
}

func newObservables(m metric.Meter) (*observables, error) {
	ins := &observables{}
	var errs [13]error
	ins.requests, errs[0] = m.Int64ObservableCounter("fairseat.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Requests and background jobs by how they left the queue (fairseat.result); a seat granted to a caller that had just given up counts as admitted and as cancelled."))
	ins.queued, errs[1] = m.Int64ObservableUpDownCounter("fairseat.queue.size", metric.WithUnit("{request}"),
		metric.WithDescription("Queued requests and jobs (including those waiting on a conflict)."))
	ins.running, errs[2] = m.Int64ObservableUpDownCounter("fairseat.running", metric.WithUnit("{request}"),
		metric.WithDescription("Requests and jobs holding a seat."))
	ins.seatsUsage, errs[3] = m.Int64ObservableUpDownCounter("fairseat.seats.usage", metric.WithUnit("{seat}"),
		metric.WithDescription("Seats in use."))
	ins.seatsLimit, errs[4] = m.Int64ObservableUpDownCounter("fairseat.seats.limit", metric.WithUnit("{seat}"),
		metric.WithDescription("Seats in total: Config.Capacity, or the adaptive limit now."))
	ins.promotions, errs[5] = m.Int64ObservableCounter("fairseat.aging.promotions", metric.WithUnit("{promotion}"),
		metric.WithDescription("Aging promotions carried by admitted requests and jobs."))
	ins.urgent, errs[6] = m.Int64ObservableCounter("fairseat.urgent.admissions", metric.WithUnit("{request}"),
		metric.WithDescription("Requests and jobs admitted while urgent."))
	ins.allocation, errs[7] = m.Float64ObservableGauge("fairseat.key.allocation", metric.WithUnit("{seat}"),
		metric.WithDescription("Fair-share allocation of a configured key (or of all other keys): Capacity × w_k / Σ w over active keys; 0 when idle."))
	ins.utilization, errs[8] = m.Float64ObservableGauge("fairseat.key.utilization", metric.WithUnit("1"),
		metric.WithDescription("Seats held by an active key divided by its fair-share allocation."))
	ins.excess, errs[9] = m.Float64ObservableGauge("fairseat.key.excess", metric.WithUnit("{seat}"),
		metric.WithDescription("Seats held by a key beyond its fair-share allocation, redistributed from keys not using theirs: max(0, running − allocation)."))
	ins.cost, errs[10] = m.Float64ObservableGauge("fairseat.cost.estimate", metric.WithUnit("s"),
		metric.WithDescription("Mean learned cost estimate over the tracked (job type, job ID) entries of a job type."))
	ins.eventsDropped, errs[11] = m.Int64ObservableCounter("fairseat.events.dropped", metric.WithUnit("{event}"),
		metric.WithDescription("Events not delivered to the event handler because it fell behind or the scheduler was closed."))
	ins.limitChanges, errs[12] = m.Int64ObservableCounter("fairseat.seats.limit.changes", metric.WithUnit("{change}"),
		metric.WithDescription("Changes of the adaptive limit, by reason (fairseat.reason: increase, decrease, pressure, operator)."))
	for i, r := range capacityReasons {
		ins.reasonOpts[i] = metric.WithAttributeSet(attribute.NewSet(attrReason.String(string(r))))
	}
	for r := range numResults {
		ins.resultOpts[r] = metric.WithAttributeSet(attribute.NewSet(attrResult.String(resultNames[r])))
	}
	return ins, errors.Join(append(errs[:], ins.store.init(m))...)
}

func (ins *observables) list() []metric.Observable {
	return []metric.Observable{ins.requests, ins.queued, ins.running, ins.seatsUsage, ins.seatsLimit,
		ins.promotions, ins.urgent, ins.allocation, ins.utilization, ins.excess, ins.cost, ins.eventsDropped,
		ins.store.estimates, ins.store.saves, ins.store.failures, ins.store.saveDuration, ins.limitChanges}
}

// typeCounts is one job type's part of a collection.
type typeCounts struct {
	obs             *typeObs
	queued, running int
	costSum         float64
	costN           int
}

// observe is the collection callback.
func (s *Scheduler) observe(ins *observables, o metric.Observer) error {
	s.mu.Lock()
	c := s.counters
	inUse, capacity := s.inUse, s.cfg.Capacity
	var changes *[len(capacityReasons)]uint64
	if a := s.adaptive; a != nil {
		c := a.changes
		changes = &c
	}
	types := make([]typeCounts, 0, len(s.types))
	for _, t := range s.types {
		types = append(types, typeCounts{t.obs, t.queued, t.running, t.obs.costSum, t.obs.costN})
	}
	shares := s.sharesLocked(make([]share, 0, len(s.obs.keyNames)+1))
	store := s.costStoreSnapshotLocked()
	s.mu.Unlock()

	for r, n := range [numResults]uint64{c.Admitted, c.RejectedQueueFull, c.RejectedWaitTimeout,
		c.RejectedClosed, c.Cancelled, c.Failed, c.Dropped, c.RejectedDeadline, c.Superseded, c.Coalesced, c.RejectedOverload} {
		o.ObserveInt64(ins.requests, int64(n), ins.resultOpts[r])
	}
	o.ObserveInt64(ins.seatsUsage, int64(inUse))
	o.ObserveInt64(ins.seatsLimit, int64(capacity))
	o.ObserveInt64(ins.promotions, int64(c.AgingPromotions))
	o.ObserveInt64(ins.urgent, int64(c.UrgentAdmissions))
	o.ObserveInt64(ins.eventsDropped, int64(c.EventsDropped))
	ins.store.observe(o, &c, &store)
	if changes != nil {
		for i, n := range changes {
			o.ObserveInt64(ins.limitChanges, int64(n), ins.reasonOpts[i])
		}
	}
	for _, t := range types {
		attrs := metric.WithAttributeSet(t.obs.attrs)
		o.ObserveInt64(ins.queued, int64(t.queued), attrs)
		o.ObserveInt64(ins.running, int64(t.running), attrs)
		if t.costN > 0 {
			o.ObserveFloat64(ins.cost, t.costSum/float64(t.costN), t.obs.typeOpt)
		}
	}
	for i, sh := range shares {
		attrs := metric.WithAttributes(attrKeySeries.String(s.obs.seriesName(i)))
		o.ObserveFloat64(ins.allocation, sh.alloc, attrs)
		o.ObserveFloat64(ins.excess, max(0, float64(sh.running)-sh.alloc), attrs)
		if sh.active && sh.alloc > 0 {
			o.ObserveFloat64(ins.utilization, float64(sh.running)/sh.alloc, attrs)
		}
	}
	return nil
}
