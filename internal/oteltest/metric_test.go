package oteltest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// collect is Collect that must succeed.
func collect(t *testing.T, mp *MeterProvider) Metrics {
	t.Helper()
	m, err := mp.Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	return m
}

// wantPoint checks metric name's point with attrs: its Value (sums and
// gauges) or its count and sum (histograms).
func wantPoint(t *testing.T, m Metrics, name string, kind Kind, number Number, want float64, attrs ...attribute.KeyValue) {
	t.Helper()
	mt, ok := m[name]
	if !ok {
		t.Errorf("metric %s missing; have:\n%s", name, m)
		return
	}
	if mt.Kind != kind || mt.Number != number {
		t.Errorf("%s is a %s %s, want %s %s", name, mt.Number, mt.Kind, number, kind)
	}
	p, ok := mt.Point(attrs...)
	got := p.Value
	if kind == Histogram {
		got = p.Sum
	}
	if !ok || got != want {
		t.Errorf("%s%v = %v (present %v), want %v; have:\n%s", name, attrs, got, ok, want, m)
	}
}

// TestSyncInstruments: every synchronous instrument aggregates per
// attribute set, cumulatively, with its scope, unit and description.
func TestSyncInstruments(t *testing.T) {
	mp := NewMeterProvider()
	m := mp.Meter("lib", metric.WithInstrumentationVersion("v2"))
	ctx := context.Background()
	a, b := attribute.String("k", "a"), attribute.String("k", "b")
	ic, _ := m.Int64Counter("ic", metric.WithUnit("{req}"), metric.WithDescription("counted"))
	iu, _ := m.Int64UpDownCounter("iu")
	ih, _ := m.Int64Histogram("ih")
	ig, _ := m.Int64Gauge("ig")
	fc, _ := m.Float64Counter("fc")
	fu, _ := m.Float64UpDownCounter("fu")
	fh, _ := m.Float64Histogram("fh")
	fg, _ := m.Float64Gauge("fg")
	for _, e := range []interface{ Enabled(context.Context) bool }{ic, iu, ih, ig, fc, fu, fh, fg} {
		if !e.Enabled(ctx) {
			t.Errorf("%T not enabled", e)
		}
	}
	ic.Add(ctx, 2, metric.WithAttributes(a))
	ic.Add(ctx, 3, metric.WithAttributes(a))
	ic.Add(ctx, 4, metric.WithAttributeSet(attribute.NewSet(b)))
	ic.Add(ctx, 1)
	iu.Add(ctx, 5)
	iu.Add(ctx, -7)
	ih.Record(ctx, 3, metric.WithAttributes(a))
	ih.Record(ctx, 4, metric.WithAttributes(a))
	ig.Record(ctx, 9)
	ig.Record(ctx, 8)
	fc.Add(ctx, 0.5)
	fc.Add(ctx, 0.25)
	fu.Add(ctx, -1.5)
	fh.Record(ctx, 0.5)
	fg.Record(ctx, 2.5, metric.WithAttributes(b))

	got := collect(t, mp)
	wantPoint(t, got, "ic", Counter, Int64, 5, a)
	wantPoint(t, got, "ic", Counter, Int64, 4, b)
	wantPoint(t, got, "ic", Counter, Int64, 1)
	wantPoint(t, got, "iu", UpDownCounter, Int64, -2)
	wantPoint(t, got, "ih", Histogram, Int64, 7, a)
	wantPoint(t, got, "ig", Gauge, Int64, 8)
	wantPoint(t, got, "fc", Counter, Float64, 0.75)
	wantPoint(t, got, "fu", UpDownCounter, Float64, -1.5)
	wantPoint(t, got, "fh", Histogram, Float64, 0.5)
	wantPoint(t, got, "fg", Gauge, Float64, 2.5, b)
	if n := len(got); n != 8 {
		t.Errorf("%d metrics, want 8:\n%s", n, got)
	}
	if ic := got["ic"]; ic.Scope != (Scope{Name: "lib", Version: "v2"}) || ic.Unit != "{req}" || ic.Description != "counted" || len(ic.Points) != 3 {
		t.Errorf("ic: %+v", ic)
	}
	if _, ok := got.Value("ic", a, attribute.Int("n", 1)); ok {
		t.Error("a point found for attributes never recorded")
	}
	// Cumulative: a second collection sees the same sums plus what came
	// after the first.
	ic.Add(ctx, 10, metric.WithAttributes(a))
	wantPoint(t, collect(t, mp), "ic", Counter, Int64, 15, a)
}

// TestHistogramBuckets: bucket i holds bounds[i-1] < v ≤ bounds[i]; the
// default bounds are the SDK's; invalid bounds are reported and replaced.
func TestHistogramBuckets(t *testing.T) {
	mp := NewMeterProvider()
	m := mp.Meter("lib")
	ctx := context.Background()
	h, err := m.Float64Histogram("h", metric.WithExplicitBucketBoundaries(0, 1, 2.5))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{-1, 0, 0.5, 1, 1.01, 2.5, 3, 100} {
		h.Record(ctx, v)
	}
	d, _ := m.Int64Histogram("d")
	d.Record(ctx, 7)
	bad, err := m.Float64Histogram("bad", metric.WithExplicitBucketBoundaries(1, 1))
	if err == nil || !strings.Contains(err.Error(), "bucket boundaries") {
		t.Errorf("unordered bounds: err %v", err)
	}
	bad.Record(ctx, 7)

	got := collect(t, mp)
	p, _ := got.Point("h")
	if s := sprint(p.Bounds, p.BucketCounts, p.Count, p.Sum, p.Min, p.Max); s != "[0 1 2.5] [2 2 2 2] 8 107.01 -1 100" {
		t.Errorf("h: bounds, buckets, count, sum, min, max = %s", s)
	}
	const sdkDefault = "[0 5 10 25 50 75 100 250 500 750 1000 2500 5000 7500 10000]"
	p, _ = got.Point("d")
	if s := sprint(p.Bounds, p.BucketCounts); s != sdkDefault+" [0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0]" {
		t.Errorf("d (default bounds): %s", s)
	}
	p, _ = got.Point("bad")
	if s := sprint(p.Bounds); s != sdkDefault {
		t.Errorf("bad bounds replaced by %s, want the default", s)
	}
}

// TestObservables: callbacks run at each Collect; what they observe counts
// for that collection only and only for their instruments; Unregister
// stops them.
func TestObservables(t *testing.T) {
	mp := NewMeterProvider()
	m := mp.Meter("lib")
	a := attribute.String("k", "a")
	ic, _ := m.Int64ObservableCounter("ic")
	iu, _ := m.Int64ObservableUpDownCounter("iu")
	ig, _ := m.Int64ObservableGauge("ig")
	fc, _ := m.Float64ObservableCounter("fc")
	fu, _ := m.Float64ObservableUpDownCounter("fu")
	fg, _ := m.Float64ObservableGauge("fg")
	stray, _ := m.Int64ObservableGauge("stray") // never registered
	foreign := noop.Int64ObservableGauge{}      // not this package's
	round := 0
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		round++
		o.ObserveInt64(ic, int64(10*round), metric.WithAttributes(a))
		o.ObserveInt64(ic, 1, metric.WithAttributes(a)) // a duplicate: summed
		o.ObserveInt64(iu, -3)
		o.ObserveInt64(ig, 1)
		o.ObserveInt64(ig, 2) // a duplicate: the last wins
		o.ObserveFloat64(fc, 0.5)
		o.ObserveFloat64(fu, -0.5)
		if round == 1 {
			o.ObserveFloat64(fg, 4.5, metric.WithAttributes(a))
		}
		o.ObserveInt64(stray, 7) // not registered with this callback: ignored
		o.ObserveInt64(foreign, 7)
		return nil
	}, ic, iu, ig, fc, fu, fg, foreign)
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, mp)
	wantPoint(t, got, "ic", ObservableCounter, Int64, 11, a)
	wantPoint(t, got, "iu", ObservableUpDownCounter, Int64, -3)
	wantPoint(t, got, "ig", ObservableGauge, Int64, 2)
	wantPoint(t, got, "fc", ObservableCounter, Float64, 0.5)
	wantPoint(t, got, "fu", ObservableUpDownCounter, Float64, -0.5)
	wantPoint(t, got, "fg", ObservableGauge, Float64, 4.5, a)
	if _, ok := got["stray"]; ok {
		t.Error("an observation of an instrument not registered with the callback was kept")
	}
	got = collect(t, mp)
	wantPoint(t, got, "ic", ObservableCounter, Int64, 21, a) // as observed, not accumulated
	if _, ok := got["fg"]; ok {
		t.Error("fg reported in a collection that did not observe it")
	}
	must(t, reg.Unregister())
	must(t, reg.Unregister()) // twice is fine
	if got := collect(t, mp); len(got) != 0 || round != 2 {
		t.Errorf("after Unregister: callback ran %d times, metrics:\n%s", round, got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestInstrumentCallbacks: callbacks given as instrument options observe
// their instrument at each Collect.
func TestInstrumentCallbacks(t *testing.T) {
	mp := NewMeterProvider()
	m := mp.Meter("lib")
	n := int64(0)
	_, err := m.Int64ObservableCounter("i", metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
		n++
		o.Observe(n)
		return nil
	}))
	must(t, err)
	_, err = m.Float64ObservableGauge("f", metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error {
		o.Observe(1.5, metric.WithAttributes(attribute.Bool("x", true)))
		return nil
	}))
	must(t, err)
	collect(t, mp)
	got := collect(t, mp)
	wantPoint(t, got, "i", ObservableCounter, Int64, 2)
	wantPoint(t, got, "f", ObservableGauge, Float64, 1.5, attribute.Bool("x", true))
}

// TestCollectErrors: callback errors are joined, with the points collected
// anyway; a name used twice is an error.
func TestCollectErrors(t *testing.T) {
	mp := NewMeterProvider()
	g, _ := mp.Meter("one").Int64ObservableGauge("g")
	boom := errors.New("boom")
	_, err := mp.Meter("one").RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(g, 1)
		return boom
	}, g)
	must(t, err)
	c, _ := mp.Meter("two").Int64Counter("g") // same name, another scope
	c.Add(context.Background(), 1)
	got, err := mp.Collect(context.Background())
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `metric "g" is both`) {
		t.Errorf("err = %v, want boom and the duplicate name", err)
	}
	wantPoint(t, got, "g", ObservableGauge, Int64, 1)
	if _, err := mp.Meter("one").RegisterCallback(nil, g); err == nil {
		t.Error("a nil callback registered without error")
	}
}

// TestInstrumentIdentity: creating an instrument twice returns the first;
// invalid names are reported with a working instrument; meters are one per
// scope.
func TestInstrumentIdentity(t *testing.T) {
	mp := NewMeterProvider()
	ctx := context.Background()
	if mp.Meter("a") != mp.Meter("a") || mp.Meter("a") == mp.Meter("a", metric.WithInstrumentationVersion("2")) {
		t.Error("meters are not one per scope")
	}
	c1, _ := mp.Meter("a").Int64Counter("c")
	c2, _ := mp.Meter("a").Int64Counter("c", metric.WithUnit("ignored"))
	c1.Add(ctx, 1)
	c2.Add(ctx, 2)
	wantPoint(t, collect(t, mp), "c", Counter, Int64, 3)
	for _, name := range []string{"", "1abc", "a b", strings.Repeat("x", 256)} {
		bad, err := mp.Meter("a").Int64Counter(name)
		if err == nil || !strings.Contains(err.Error(), "invalid instrument name") {
			t.Errorf("name %q: err %v", name, err)
		}
		bad.Add(ctx, 1) // usable
	}
	for _, name := range []string{"a", "fairseat.queue.wait.duration", "A_b-c/d.9"} {
		if _, err := mp.Meter("a").Float64Gauge(name); err != nil {
			t.Errorf("name %q: %v", name, err)
		}
	}
}

// TestCallbackMayMeasure: Collect runs callbacks without holding the
// provider's lock, so a callback may record synchronous measurements (with
// the lock held this would deadlock).
func TestCallbackMayMeasure(t *testing.T) {
	mp := NewMeterProvider()
	m := mp.Meter("lib")
	runs, _ := m.Int64Counter("runs")
	g, _ := m.Int64ObservableGauge("g")
	_, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		runs.Add(ctx, 1)
		o.ObserveInt64(g, 1)
		return nil
	}, g)
	must(t, err)
	collect(t, mp)
	wantPoint(t, collect(t, mp), "runs", Counter, Int64, 2)
}

func TestMetricsString(t *testing.T) {
	mp := NewMeterProvider()
	m := mp.Meter("lib")
	ctx := context.Background()
	c, _ := m.Int64Counter("b.count", metric.WithUnit("{x}"), metric.WithDescription("things"))
	c.Add(ctx, 2, metric.WithAttributes(attribute.String("k", "z")))
	c.Add(ctx, 1, metric.WithAttributes(attribute.String("k", "a"), attribute.Int("n", 1)))
	h, _ := m.Float64Histogram("a.hist", metric.WithExplicitBucketBoundaries(1))
	h.Record(ctx, 0.5)
	want := `a.hist (float64 Histogram, scope lib, unit "")
	{} count=1 sum=0.5 min=0.5 max=0.5 buckets=[1 0]
b.count (int64 Counter, scope lib, unit "{x}"): things
	{k=a,n=1} 1
	{k=z} 2
`
	if got := collect(t, mp).String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
}
