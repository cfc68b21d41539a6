package admission

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/fairseat/fairseat/internal/oteltest"
)

// telemetry is an in-memory tracer and meter provider (internal/oteltest:
// the OpenTelemetry API, not the SDK), for one test.
type telemetry struct {
	*oteltest.Recorder
}

func newTelemetry(t *testing.T) *telemetry {
	t.Helper()
	return &telemetry{oteltest.New()}
}

func (tel *telemetry) options(extra ...Option) []Option {
	return append([]Option{WithTracerProvider(tel.TracerProvider), WithMeterProvider(tel.MeterProvider)}, extra...)
}

// parent starts a recording span to act as the caller's.
func (tel *telemetry) parent(ctx context.Context) (context.Context, trace.Span) {
	return tel.TracerProvider.Tracer("test").Start(ctx, "caller")
}

// waitSpans returns the ended wait spans.
func (tel *telemetry) waitSpans() []oteltest.SpanData {
	var out []oteltest.SpanData
	for _, s := range tel.Ended() {
		if s.Name == spanWait {
			out = append(out, s)
		}
	}
	return out
}

// collect reads every metric, by name.
func (tel *telemetry) collect(t *testing.T) oteltest.Metrics {
	t.Helper()
	m, err := tel.Collect(context.Background())
	must(t, err)
	for _, mt := range m {
		if mt.Scope.Name != ScopeName {
			t.Errorf("scope %q, want %q", mt.Scope.Name, ScopeName)
		}
	}
	return m
}

// newOTelScheduler is newTestScheduler with options.
func newOTelScheduler(t *testing.T, cfg Config, fg, bg JobTypeConfig, opts ...Option) *Scheduler {
	t.Helper()
	s, err := New(cfg, opts...)
	must(t, err)
	if fg.Priority == 0 {
		fg.Priority = PriorityForeground
	}
	if bg.Priority == 0 {
		bg.Priority = PriorityBackground
	}
	must(t, s.RegisterType("fg", fg))
	must(t, s.RegisterType("bg", bg))
	return s
}

func attrMap(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// wantAttrs checks that got has each of want (compared as strings).
func wantAttrs(t *testing.T, what string, got []attribute.KeyValue, want map[attribute.Key]any) {
	t.Helper()
	m := attrMap(got)
	for k, v := range want {
		g, ok := m[k]
		if !ok {
			t.Errorf("%s: attribute %s missing (have %v)", what, k, got)
			continue
		}
		if fmt.Sprint(g.AsInterface()) != fmt.Sprint(v) {
			t.Errorf("%s: %s = %v, want %v", what, k, g.AsInterface(), v)
		}
	}
}

func noIdentifiers(t *testing.T, what string, got []attribute.KeyValue) {
	t.Helper()
	m := attrMap(got)
	if _, ok := m[attrFairKey]; ok {
		t.Errorf("%s carries the fairness key without the opt-in: %v", what, got)
	}
	if _, ok := m[attrJobID]; ok {
		t.Errorf("%s carries the job ID without the opt-in: %v", what, got)
	}
}

func TestSpanAdmittedAtOnce(t *testing.T) {
	for _, ids := range []bool{false, true} {
		t.Run(fmt.Sprint("identifiers=", ids), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tel := newTelemetry(t)
				s := newOTelScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{}, tel.options(WithSpanIdentifiers(ids))...)
				ctx, parent := tel.parent(t.Context())
				p, err := s.Acquire(ctx, Request{Type: "fg", JobID: "repo", FairnessKey: "10.0.0.1"})
				must(t, err)
				p.Release()
				parent.End()
				if n := len(tel.waitSpans()); n != 0 {
					t.Fatalf("%d wait spans for an admission without wait", n)
				}
				ended := tel.Ended()
				if len(ended) != 1 || len(ended[0].Events) != 1 || ended[0].Events[0].Name != eventAdmitted {
					t.Fatalf("want the caller's span with one %q event, got %d spans", eventAdmitted, len(ended))
				}
				ev := ended[0].Events[0]
				wantAttrs(t, "admitted event", ev.Attributes, map[attribute.Key]any{
					attrType: "fg", attrEffective: 40, attrQueueLen: 0})
				if ids {
					wantAttrs(t, "admitted event", ev.Attributes, map[attribute.Key]any{attrFairKey: "10.0.0.1", attrJobID: "repo"})
				} else {
					noIdentifiers(t, "admitted event", ev.Attributes)
				}
				must(t, s.Close(t.Context()))
			})
		})
	}
}

// TestSpanNotRecording: without a recording span in ctx the fast path adds
// nothing anywhere.
func TestSpanNotRecording(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		s := newOTelScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{}, tel.options()...)
		p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "repo", FairnessKey: "k"})
		must(t, err)
		p.Release()
		if n := len(tel.Ended()) + len(tel.Spans()); n != 0 {
			t.Fatalf("%d spans without a caller span and without a wait", n)
		}
		must(t, s.Close(t.Context()))
	})
}

func TestSpanAdmittedAfterWait(t *testing.T) {
	for _, ids := range []bool{false, true} {
		t.Run(fmt.Sprint("identifiers=", ids), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tel := newTelemetry(t)
				s := newOTelScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{}, tel.options(WithSpanIdentifiers(ids))...)
				holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k1"})
				must(t, err)
				ctx, parent := tel.parent(t.Context())
				ch := acquireAsync(ctx, s, Request{Type: "fg", JobID: "b", FairnessKey: "k2"})
				synctest.Wait()
				time.Sleep(3 * time.Second)
				holder.Release()
				r := <-ch
				must(t, r.err)
				r.p.Release()
				parent.End()

				spans := tel.waitSpans()
				if len(spans) != 1 {
					t.Fatalf("%d wait spans, want 1", len(spans))
				}
				sp := spans[0]
				if sp.Parent.SpanID() != parent.SpanContext().SpanID() || sp.Kind != trace.SpanKindInternal {
					t.Errorf("wait span: parent %v kind %v, want child of the caller's span, internal", sp.Parent.SpanID(), sp.Kind)
				}
				if d := sp.End.Sub(sp.Start); d != 3*time.Second {
					t.Errorf("wait span lasts %v, want 3s", d)
				}
				if sp.Status.Code != codes.Unset {
					t.Errorf("status %v for an admission", sp.Status)
				}
				wantAttrs(t, "wait span", sp.Attributes, map[attribute.Key]any{
					attrType: "fg", attrBase: 40, attrEffective: 40, attrUrgent: false, attrPromoted: 0,
					attrQueueLen: 0, attrWait: 3, attrOutcome: "admitted"})
				if ids {
					wantAttrs(t, "wait span", sp.Attributes, map[attribute.Key]any{attrFairKey: "k2", attrJobID: "b"})
				} else {
					noIdentifiers(t, "wait span", sp.Attributes)
				}
				must(t, s.Close(t.Context()))
			})
		})
	}
}

// TestSpanOutcomes: each way a wait can end is on its span.
func TestSpanOutcomes(t *testing.T) {
	cases := []struct {
		name    string
		outcome string
		wait    time.Duration
		status  codes.Code
		// end makes the waiter (started at 0, key "w", with cancel) end.
		end func(t *testing.T, s *Scheduler, cancel context.CancelFunc)
	}{
		{"cancelled", "cancelled", time.Second, codes.Unset, func(t *testing.T, s *Scheduler, cancel context.CancelFunc) {
			time.Sleep(time.Second)
			cancel()
		}},
		{"wait timeout", "rejected_wait_timeout", 2 * time.Second, codes.Error, func(t *testing.T, s *Scheduler, cancel context.CancelFunc) {
			time.Sleep(5 * time.Second)
		}},
		{"pushed out", "rejected_queue_full", time.Second, codes.Error, func(t *testing.T, s *Scheduler, cancel context.CancelFunc) {
			time.Sleep(time.Second)
			// The queue (MaxQueue 2) is full; a key with nothing queued
			// pushes out the newest job of the longest key, "w".
			acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "z", FairnessKey: "light"})
			synctest.Wait()
		}},
		{"closed", "rejected_closed", time.Second, codes.Error, func(t *testing.T, s *Scheduler, cancel context.CancelFunc) {
			time.Sleep(time.Second)
			must(t, s.Close(t.Context()))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tel := newTelemetry(t)
				s := newOTelScheduler(t, Config{Capacity: 1, MaxQueue: 2}, JobTypeConfig{MaxWait: 2 * time.Second}, JobTypeConfig{}, tel.options()...)
				holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "h"})
				must(t, err)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				ctx, parent := tel.parent(ctx)
				other := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "o", FairnessKey: "w"})
				synctest.Wait()
				ch := acquireAsync(ctx, s, Request{Type: "fg", JobID: "b", FairnessKey: "w"})
				synctest.Wait()
				tc.end(t, s, cancel)
				r := <-ch
				if r.err == nil {
					t.Fatal("waiter admitted")
				}
				parent.End()
				holder.Release()
				for range 2 { // "other" (and the pushing waiter) end somehow
					select {
					case r := <-other:
						if r.p != nil {
							r.p.Release()
						}
					default:
					}
				}
				var mine *oteltest.SpanData
				for _, sp := range tel.waitSpans() {
					if sp.Parent.SpanID() == parent.SpanContext().SpanID() {
						mine = &sp
					}
				}
				if mine == nil {
					t.Fatalf("no wait span under the caller's span")
				}
				wantAttrs(t, "wait span", mine.Attributes, map[attribute.Key]any{
					attrOutcome: tc.outcome, attrWait: tc.wait.Seconds(), attrQueueLen: 1, attrType: "fg"})
				if _, ok := attrMap(mine.Attributes)[attrEffective]; ok {
					t.Errorf("effective priority on a span that was not admitted")
				}
				if mine.Status.Code != tc.status {
					t.Errorf("status %v, want %v", mine.Status.Code, tc.status)
				}
				noIdentifiers(t, "wait span", mine.Attributes)
				_ = s.Close(t.Context())
				synctest.Wait()
			})
		})
	}
}

// TestSpanRejectedAtArrival: a rejection without wait is an event on the
// caller's span.
func TestSpanRejectedAtArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		s := newOTelScheduler(t, Config{Capacity: 1, DefaultKey: KeyPolicy{MaxQueued: 1}}, JobTypeConfig{}, JobTypeConfig{}, tel.options()...)
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k"})
		must(t, err)
		ch := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "b", FairnessKey: "k"})
		synctest.Wait()
		ctx, parent := tel.parent(t.Context())
		if _, err := s.Acquire(ctx, Request{Type: "fg", JobID: "c", FairnessKey: "k"}); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("err = %v, want ErrQueueFull", err)
		}
		parent.End()
		evs := tel.Ended()[0].Events
		if len(evs) != 1 || evs[0].Name != eventRejected {
			t.Fatalf("caller's span events %v, want one %q", evs, eventRejected)
		}
		wantAttrs(t, "rejected event", evs[0].Attributes, map[attribute.Key]any{
			attrOutcome: "rejected_queue_full", attrPerKey: true, attrQueueLen: 1, attrType: "fg"})
		noIdentifiers(t, "rejected event", evs[0].Attributes)
		holder.Release()
		(<-ch).p.Release()
		must(t, s.Close(t.Context()))
	})
}

// histPoint finds the point with the given attributes of histogram mt,
// whose values must be of type number.
func histPoint(t *testing.T, mt oteltest.Metric, number oteltest.Number, kvs ...attribute.KeyValue) oteltest.Point {
	t.Helper()
	if mt.Kind != oteltest.Histogram || mt.Number != number {
		t.Fatalf("metric %q is a %v %v, not a %v histogram", mt.Name, mt.Number, mt.Kind, number)
	}
	p, ok := mt.Point(kvs...)
	if !ok {
		t.Fatalf("no histogram point with %v", kvs)
	}
	return p
}

// value returns the point with the given attributes of mt, an int64 sum
// (counter or up-down counter) or a float64 gauge, and whether it exists.
func value(t *testing.T, mt oteltest.Metric, kvs ...attribute.KeyValue) (float64, bool) {
	t.Helper()
	switch {
	case mt.Number == oteltest.Int64 && (mt.Kind == oteltest.ObservableCounter || mt.Kind == oteltest.ObservableUpDownCounter ||
		mt.Kind == oteltest.Counter || mt.Kind == oteltest.UpDownCounter):
	case mt.Number == oteltest.Float64 && (mt.Kind == oteltest.ObservableGauge || mt.Kind == oteltest.Gauge):
	default:
		t.Fatalf("metric %q is a %v %v", mt.Name, mt.Number, mt.Kind)
	}
	p, ok := mt.Point(kvs...)
	return p.Value, ok
}

func wantValue(t *testing.T, m oteltest.Metrics, name string, want float64, kvs ...attribute.KeyValue) {
	t.Helper()
	mt, ok := m[name]
	if !ok {
		t.Errorf("metric %s missing", name)
		return
	}
	got, ok := value(t, mt, kvs...)
	if !ok || math.Abs(got-want) > 1e-9 {
		t.Errorf("%s%v = %v (present %v), want %v", name, kvs, got, ok, want)
	}
}

// TestMetricsScript runs a scripted sequence in fake time and checks every
// metric's value.
func TestMetricsScript(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		s := newOTelScheduler(t, Config{Capacity: 1}, JobTypeConfig{DefaultCost: 5 * time.Second}, JobTypeConfig{}, tel.options()...)
		fg, tier := attrType.String("fg"), attrTier.Int(40)
		// t=0: A is admitted at once, B waits.
		a, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k1"})
		must(t, err)
		chB := acquireAsync(t.Context(), s, Request{Type: "fg", JobID: "b", FairnessKey: "k2"})
		synctest.Wait()
		m := tel.collect(t)
		wantValue(t, m, "fairseat.queue.size", 1, fg, tier)
		wantValue(t, m, "fairseat.running", 1, fg, tier)
		wantValue(t, m, "fairseat.seats.usage", 1)
		wantValue(t, m, "fairseat.seats.limit", 1)

		// t=3: A ends, B is admitted after 3s; C arrives and waits.
		time.Sleep(3 * time.Second)
		a.Release()
		b := (<-chB).p
		ctxC, cancelC := context.WithCancel(t.Context())
		chC := acquireAsync(ctxC, s, Request{Type: "fg", JobID: "c", FairnessKey: "k3"})
		synctest.Wait()
		// t=4: C gives up after 1s. t=5: B ends.
		time.Sleep(time.Second)
		cancelC()
		if r := <-chC; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("C: %v", r.err)
		}
		time.Sleep(time.Second)
		b.Release()

		m = tel.collect(t)
		admitted := histPoint(t, m["fairseat.queue.wait.duration"], oteltest.Float64, fg, tier, attrResult.String("admitted"))
		if admitted.Count != 2 || admitted.Sum != 3 {
			t.Errorf("admitted waits: count %d sum %v, want 2 and 3s", admitted.Count, admitted.Sum)
		}
		cancelled := histPoint(t, m["fairseat.queue.wait.duration"], oteltest.Float64, fg, tier, attrResult.String("cancelled"))
		if cancelled.Count != 1 || cancelled.Sum != 1 {
			t.Errorf("cancelled waits: count %d sum %v, want 1 and 1s", cancelled.Count, cancelled.Sum)
		}
		prio := histPoint(t, m["fairseat.priority.effective"], oteltest.Int64, fg, tier)
		if prio.Count != 2 || prio.Sum != 80 {
			t.Errorf("effective priority: count %d sum %v, want 2 and 80", prio.Count, prio.Sum)
		}
		for r, want := range map[string]float64{"admitted": 2, "cancelled": 1, "rejected_queue_full": 0, "rejected_wait_timeout": 0,
			"rejected_closed": 0, "failed": 0, "dropped": 0} {
			wantValue(t, m, "fairseat.requests", want, attrResult.String(r))
		}
		wantValue(t, m, "fairseat.queue.size", 0, fg, tier)
		wantValue(t, m, "fairseat.running", 0, fg, tier)
		wantValue(t, m, "fairseat.seats.usage", 0)
		wantValue(t, m, "fairseat.aging.promotions", 0)
		wantValue(t, m, "fairseat.urgent.admissions", 0)
		wantValue(t, m, "fairseat.events.dropped", 0)
		// a ran 3s, b 2s, both seeded at 5s: 0.3·3+0.7·5 = 4.4, 0.3·2+0.7·5 = 4.1.
		wantValue(t, m, "fairseat.cost.estimate", (4.4+4.1)/2, fg)
		// Nothing is active: the "other" series is 0.
		wantValue(t, m, "fairseat.key.allocation", 0, attrKeySeries.String("other"))
		must(t, s.Close(t.Context()))
		// After Close the observable instruments stop reporting.
		if _, ok := tel.collect(t)["fairseat.requests"]; ok {
			t.Error("fairseat.requests still reported after Close")
		}
	})
}

// TestMetricsCostEviction: the mean follows the LRU's evictions.
func TestMetricsCostEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		s := newOTelScheduler(t, Config{Capacity: 2, MaxCostEntries: 2}, JobTypeConfig{DefaultCost: 10 * time.Second}, JobTypeConfig{}, tel.options()...)
		run := func(id string, d time.Duration) {
			must(t, s.RunSync(t.Context(), "fg", id, "k", func(context.Context) error { time.Sleep(d); return nil }))
		}
		run("x", 0)              // 7
		run("y", 10*time.Second) // 10
		run("z", 20*time.Second) // 13, evicts x
		wantValue(t, tel.collect(t), "fairseat.cost.estimate", (10+13)/2.0, attrType.String("fg"))
		// Two jobs hold y's entry; a third entry evicts it while they run.
		p1, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "y", FairnessKey: "k"})
		must(t, err)
		p2, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "y", FairnessKey: "k"})
		must(t, err)
		p1.Release()
		p2.Release()
		// y: 0.3·0+0.7·10 = 7, then 4.9; z stays 13.
		run("w", 10*time.Second) // 10, evicts z (y was used more recently)
		wantValue(t, tel.collect(t), "fairseat.cost.estimate", (4.9+10)/2.0, attrType.String("fg"))
		must(t, s.Close(t.Context()))
	})
}

// TestMetricsFairShare: allocation, utilisation and excess per configured
// key and "other".
func TestMetricsFairShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		cfg := Config{Capacity: 4, Keys: map[string]KeyPolicy{"gold": {Weight: 3}, "silver": {Weight: 2}}}
		s := newOTelScheduler(t, cfg, JobTypeConfig{}, JobTypeConfig{}, tel.options()...)
		var permits []*Permit
		acq := func(key string) {
			p, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: fmt.Sprint(len(permits)), FairnessKey: key})
			must(t, err)
			permits = append(permits, p)
		}
		acq("gold")
		acq("anon-1")
		acq("anon-1")
		acq("anon-2")
		// Active: gold (3), anon-1 (1), anon-2 (1); Σw = 5; silver idle.
		m := tel.collect(t)
		gold, silver, other := attrKeySeries.String("gold"), attrKeySeries.String("silver"), attrKeySeries.String("other")
		wantValue(t, m, "fairseat.key.allocation", 4*3/5.0, gold)
		wantValue(t, m, "fairseat.key.allocation", 0, silver)
		wantValue(t, m, "fairseat.key.allocation", 4*2/5.0, other)
		wantValue(t, m, "fairseat.key.utilization", 1/(12/5.0), gold)
		wantValue(t, m, "fairseat.key.utilization", 3/(8/5.0), other)
		if _, ok := value(t, m["fairseat.key.utilization"], silver); ok {
			t.Error("utilisation reported for an idle key")
		}
		wantValue(t, m, "fairseat.key.excess", 0, gold)
		wantValue(t, m, "fairseat.key.excess", 3-8/5.0, other)
		for _, p := range permits {
			p.Release()
		}
		m = tel.collect(t)
		wantValue(t, m, "fairseat.key.allocation", 0, gold)
		wantValue(t, m, "fairseat.key.allocation", 0, other)
		must(t, s.Close(t.Context()))
	})
}

// TestMetricsNoRawKeys: no metric attribute carries a fairness key or job
// ID that the operator did not configure.
func TestMetricsNoRawKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		s := newOTelScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{}, tel.options(WithSpanIdentifiers(true))...)
		must(t, s.RunSync(t.Context(), "fg", "secret-repo", "203.0.113.9", func(context.Context) error { return nil }))
		m, err := tel.Collect(context.Background())
		must(t, err)
		text := m.String() // every name, unit, description, scope, attribute and value
		for _, raw := range []string{"secret-repo", "203.0.113.9"} {
			if strings.Contains(text, raw) {
				t.Errorf("metrics carry %q:\n%s", raw, text)
			}
		}
		must(t, s.Close(t.Context()))
	})
}

// TestMetricsBackground: background waits, failures, expiry and drops.
func TestMetricsBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		s := newOTelScheduler(t, Config{Capacity: 1}, JobTypeConfig{}, JobTypeConfig{MaxWait: 10 * time.Second}, tel.options()...)
		holder, err := s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k"})
		must(t, err)
		must(t, s.Submit("bg", "x", func(context.Context) error { return errors.New("boom") }))
		time.Sleep(2 * time.Second)
		holder.Release() // x runs after 2s and fails
		synctest.Wait()
		holder, err = s.Acquire(t.Context(), Request{Type: "fg", JobID: "a", FairnessKey: "k"})
		must(t, err)
		must(t, s.Submit("bg", "y", func(context.Context) error { return nil }))
		time.Sleep(11 * time.Second) // y expires after 10s
		must(t, s.Submit("bg", "z", func(context.Context) error { return nil }))
		time.Sleep(time.Second)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := s.Close(ctx); err == nil {
			t.Fatal("Close dropped z without error")
		}
		holder.Release()
		m := tel.collect(t) // the histogram outlives Close
		bg, tier := attrType.String("bg"), attrTier.Int(10)
		for _, c := range []struct {
			result string
			count  uint64
			sum    float64
		}{{"admitted", 1, 2}, {"rejected_wait_timeout", 1, 10}, {"dropped", 1, 1}} {
			p := histPoint(t, m["fairseat.queue.wait.duration"], oteltest.Float64, bg, tier, attrResult.String(c.result))
			if p.Count != c.count || p.Sum != c.sum {
				t.Errorf("bg %s waits: count %d sum %v, want %d and %v", c.result, p.Count, p.Sum, c.count, c.sum)
			}
		}
		if snap := s.Snapshot(); snap.Counters.Failed != 1 || snap.Counters.Dropped != 1 {
			t.Errorf("counters %+v", snap.Counters)
		}
	})
}

// checkObserverLocked verifies the observer's incremental sums against the
// keys (checkInvariantsLocked): activeN/activeW count every active key,
// otherN/otherW the active keys not in Config.Keys, and each type's cost sum
// and count are those of its entries in the cost LRU.
func (s *Scheduler) checkObserverLocked() error {
	o := s.obs
	n, w, on, ow := 0, 0.0, 0, 0.0
	count := func(k *keyState) {
		if !k.active {
			return
		}
		n, w = n+1, w+k.w
		if _, ok := o.keyIdx[k.name]; !ok {
			on, ow = on+1, ow+k.w
		}
	}
	for _, k := range s.keys.byName {
		count(k)
	}
	if len(o.keyNames) == 0 {
		on, ow = 0, 0 // not kept: they equal activeN and activeW
	}
	if n != o.activeN || on != o.otherN || math.Abs(w-o.activeW) > 1e-6 || math.Abs(ow-o.otherW) > 1e-6 {
		return fmt.Errorf("observer: active keys %d (Σw %v), other %d (Σw %v); counted %d (%v), %d (%v)",
			o.activeN, o.activeW, o.otherN, o.otherW, n, w, on, ow)
	}
	sums, counts := map[JobType]float64{}, map[JobType]int{}
	for _, k := range s.costs.Keys() {
		e, _ := s.costs.Peek(k)
		sums[k.typ] += e.est
		counts[k.typ]++
	}
	for name, t := range s.types {
		if t.obs.costN != counts[name] || math.Abs(t.obs.costSum-sums[name]) > 1e-6*max(1, sums[name]) {
			return fmt.Errorf("observer: type %q cost sum %v over %d, entries sum %v over %d",
				name, t.obs.costSum, t.obs.costN, sums[name], counts[name])
		}
	}
	return nil
}

// seedCostLocked puts a cost entry in the LRU as learnLocked would, keeping
// the cost metric's sums exact (tests that seed estimates).
func (s *Scheduler) seedCostLocked(k costKey, e *costEntry) {
	t := s.types[k.typ]
	if old, ok := s.costs.Peek(k); ok {
		t.obs.costSum -= old.est
		t.obs.costN--
	}
	s.costs.Add(k, e)
	s.costsFront = e
	s.costAddedLocked(t, e)
}

// TestSpanDryRun: a request dry-run admitted although it would have waited
// says on its admitted event what would have held it back.
func TestSpanDryRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		s := newOTelScheduler(t, Config{Capacity: 2, DryRun: true}, JobTypeConfig{ConflictGroup: "git"}, JobTypeConfig{}, tel.options()...)
		ctx, parent := tel.parent(t.Context())
		var permits []*Permit
		for range 3 { // the second conflicts on "repo"; the third finds no seat
			p, err := s.Acquire(ctx, Request{Type: "fg", JobID: "repo"})
			must(t, err)
			permits = append(permits, p)
		}
		p, err := s.Acquire(ctx, Request{Type: "fg", JobID: "other"})
		must(t, err)
		permits = append(permits, p)
		for _, p := range permits {
			p.Release()
		}
		parent.End()
		var got []string
		for _, ev := range tel.Ended()[0].Events {
			got = append(got, attrMap(ev.Attributes)[attrDryRun].AsString())
		}
		if want := []string{"", "conflict", "conflict", "queue"}; !slices.Equal(got, want) {
			t.Errorf("dry-run reasons on the admitted events = %q, want %q", got, want)
		}
		must(t, s.Close(t.Context()))
	})
}
