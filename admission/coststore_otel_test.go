package admission

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// TestCostStoreMetrics: the fairseat.cost.store.* instruments follow the
// Counters and the last save, and the learned cost metric shows loaded
// estimates before any admission; without a store there is no series.
func TestCostStoreMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		g := newGateStore(false)
		now := time.Now()
		g.loads = []CostEstimate{
			{Type: "clone", JobID: "linux", Seconds: 60, Observed: now.Add(-time.Minute)},
			{Type: "clone", JobID: "small", Seconds: 2, Observed: now.Add(-time.Minute)},
			{Type: "clone", JobID: "old", Seconds: 9, Observed: now.Add(-48 * time.Hour)}, // expired
		}
		s, err := New(Config{Capacity: 1}, tel.options(WithCostStore(g, time.Minute), WithLogger(slog.New(slog.DiscardHandler)))...)
		must(t, err)
		must(t, s.RegisterType("clone", cloneType))
		result := func(r string) attribute.KeyValue { return attrStoreResult.String(r) }
		op := func(o string) attribute.KeyValue { return attrStoreOp.String(o) }
		want := func(step string, loaded, skipped, saved, saves, loadFail, saveFail float64, duration bool) {
			t.Helper()
			m := tel.collect(t)
			for _, c := range []struct {
				name string
				kv   []attribute.KeyValue
				v    float64
			}{
				{"fairseat.cost.store.estimates", []attribute.KeyValue{result("loaded")}, loaded},
				{"fairseat.cost.store.estimates", []attribute.KeyValue{result("skipped")}, skipped},
				{"fairseat.cost.store.estimates", []attribute.KeyValue{result("saved")}, saved},
				{"fairseat.cost.store.saves", nil, saves},
				{"fairseat.cost.store.failures", []attribute.KeyValue{op("load")}, loadFail},
				{"fairseat.cost.store.failures", []attribute.KeyValue{op("save")}, saveFail},
				{"fairseat.cost.estimate", []attribute.KeyValue{attrType.String("clone")}, 31}, // (60+2)/2, before any admission
			} {
				if v, ok := m.Value(c.name, c.kv...); !ok || v != c.v {
					t.Errorf("%s: %s%v = %v (present %v), want %v\n%s", step, c.name, c.kv, v, ok, c.v, m)
				}
			}
			if _, ok := m.Value("fairseat.cost.store.save.duration"); ok != duration {
				t.Errorf("%s: fairseat.cost.store.save.duration present %v, want %v\n%s", step, ok, duration, m)
			}
		}
		want("after New", 2, 1, 0, 0, 0, 0, false)
		time.Sleep(time.Minute)
		synctest.Wait()
		want("after the first save", 2, 1, 2, 1, 0, 0, true)
		g.setFail(errors.New("disk full"))
		time.Sleep(time.Minute)
		synctest.Wait()
		want("after a failed save", 2, 1, 2, 1, 0, 1, true)
		must(t, s.Close(t.Context()))

		// No store: no cost store series.
		tel = newTelemetry(t)
		s = newOTelScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{}, tel.options()...)
		for name := range tel.collect(t) {
			if strings.HasPrefix(name, "fairseat.cost.store.") {
				t.Errorf("%s reported without a cost store", name)
			}
		}
		must(t, s.Close(t.Context()))
	})
}
