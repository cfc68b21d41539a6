package admission

import (
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Attribute keys of the cost store's metrics.
const (
	attrStoreResult = attribute.Key("fairseat.cost.store.result")    // loaded, skipped, saved
	attrStoreOp     = attribute.Key("fairseat.cost.store.operation") // load, save
)

// costStoreInstruments are the WithCostStore metrics, read by the
// observable callback (metrics.go) from Counters and CostStoreSnapshot.
// They report nothing without a store.
type costStoreInstruments struct {
	estimates    metric.Int64ObservableCounter // fairseat.cost.store.estimates, by result
	saves        metric.Int64ObservableCounter // fairseat.cost.store.saves
	failures     metric.Int64ObservableCounter // fairseat.cost.store.failures, by operation
	saveDuration metric.Float64ObservableGauge // fairseat.cost.store.save.duration

	loaded, skipped, saved metric.ObserveOption
	load, save             metric.ObserveOption
}

func (ins *costStoreInstruments) init(m metric.Meter) error {
	var errs [4]error
	ins.estimates, errs[0] = m.Int64ObservableCounter("fairseat.cost.store.estimates", metric.WithUnit("{estimate}"),
		metric.WithDescription("Learned cost estimates loaded from the cost store (fairseat.cost.store.result loaded: tracked once their job type was registered; skipped: invalid, expired or beyond MaxCostEntries) and written to it (saved, summed over successful saves)."))
	ins.saves, errs[1] = m.Int64ObservableCounter("fairseat.cost.store.saves", metric.WithUnit("{save}"),
		metric.WithDescription("Successful saves of the learned cost estimates to the cost store."))
	ins.failures, errs[2] = m.Int64ObservableCounter("fairseat.cost.store.failures", metric.WithUnit("{operation}"),
		metric.WithDescription("Failed loads (the scheduler started with no learned costs) and saves (the store kept its previous estimates) of the cost store, by fairseat.cost.store.operation."))
	ins.saveDuration, errs[3] = m.Float64ObservableGauge("fairseat.cost.store.save.duration", metric.WithUnit("s"),
		metric.WithDescription("How long the last save of the learned cost estimates took (the copy under the scheduler's lock and the store's write)."))
	ins.loaded = metric.WithAttributeSet(attribute.NewSet(attrStoreResult.String("loaded")))
	ins.skipped = metric.WithAttributeSet(attribute.NewSet(attrStoreResult.String("skipped")))
	ins.saved = metric.WithAttributeSet(attribute.NewSet(attrStoreResult.String("saved")))
	ins.load = metric.WithAttributeSet(attribute.NewSet(attrStoreOp.String("load")))
	ins.save = metric.WithAttributeSet(attribute.NewSet(attrStoreOp.String("save")))
	return errors.Join(errs[:]...)
}

// observe reports c's cost store counters and the last save's duration
// (from st, the scheduler's CostStoreSnapshot), when a store is configured.
func (ins *costStoreInstruments) observe(o metric.Observer, c *Counters, st *CostStoreSnapshot) {
	if st.Every == 0 {
		return // no CostStore
	}
	o.ObserveInt64(ins.estimates, int64(c.CostEntriesLoaded), ins.loaded)
	o.ObserveInt64(ins.estimates, int64(c.CostEntriesSkipped), ins.skipped)
	o.ObserveInt64(ins.estimates, int64(c.CostEntriesSaved), ins.saved)
	o.ObserveInt64(ins.saves, int64(c.CostSaves))
	o.ObserveInt64(ins.failures, int64(c.CostLoadFailures), ins.load)
	o.ObserveInt64(ins.failures, int64(c.CostSaveFailures), ins.save)
	if !st.LastSave.IsZero() {
		o.ObserveFloat64(ins.saveDuration, st.LastSaveDuration.Seconds())
	}
}
