package throttle

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/fairseat/fairseat/internal/oteltest"
)

// Each request is counted once by decision, refusals and pushbacks are
// events on the recording span of the context, and metrics carry no
// backend or call.
func TestTelemetry(t *testing.T) {
	rec := oteltest.New()
	tm := NewTelemetry(rec.MeterProvider, "test")
	ctx, span := rec.TracerProvider.Tracer("test").Start(context.Background(), "call")
	tm.Decided(ctx, "b", "m", Decision{})               // allowed: counted when it ends
	tm.Recorded(ctx, "b", "m", Outcome{Accepted: true}) // accepted
	tm.Decided(ctx, "b", "m", Decision{})
	tm.Recorded(ctx, "b", "m", Outcome{Code: 8, Pushback: 1500 * time.Millisecond}) // rejected, pushback
	tm.Decided(ctx, "b", "m", Decision{Reason: PushedBack, RetryAfter: time.Second, Code: 8})
	tm.Decided(ctx, "b", "m", Decision{Reason: Throttled, P: 0.25, Requests: 3, Accepts: 1, Code: 8})
	span.End()

	m, err := rec.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for decision, want := range map[string]float64{DecisionAccepted: 1, DecisionRejected: 1, DecisionPushedBack: 1, DecisionThrottled: 1} {
		if got, _ := m.Value(MetricRequests, AttrDecision.String(decision)); got != want {
			t.Errorf("%s{%s} = %v, want %v\n%s", MetricRequests, decision, got, want, m)
		}
	}
	if got, _ := m.Value(MetricPushbacks); got != 1 || len(m[MetricRequests].Points) != 4 {
		t.Errorf("want one pushback and four series of requests\n%s", m)
	}

	events := rec.Ended()[0].Events
	if len(events) != 3 {
		t.Fatalf("events %+v, want a pushback and two refusals", events)
	}
	want := []map[attribute.Key]attribute.Value{
		{AttrBackend: attribute.StringValue("b"), AttrCall: attribute.StringValue("m"), AttrRetryAfter: attribute.Float64Value(1.5)},
		{AttrDecision: attribute.StringValue("pushed_back"), AttrRetryAfter: attribute.Float64Value(1), AttrBackend: attribute.StringValue("b")},
		{AttrDecision: attribute.StringValue("throttled"), AttrP: attribute.Float64Value(0.25), AttrRequests: attribute.Int64Value(3), AttrAccepts: attribute.Int64Value(1)},
	}
	for i, name := range []string{EventPushback, EventRefused, EventRefused} {
		if events[i].Name != name {
			t.Errorf("event %d is %s, want %s", i, events[i].Name, name)
		}
		for k, v := range want[i] {
			if got, ok := events[i].Attr(k); !ok || got != v {
				t.Errorf("event %d (%s): %s = %v, want %v", i, name, k, got.String(), v.String())
			}
		}
	}
}
