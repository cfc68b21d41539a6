package oteltest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// spanNamed returns the span called name among spans.
func spanNamed(t *testing.T, spans []SpanData, name string) SpanData {
	t.Helper()
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no span %q among %d: %+v", name, len(spans), spans)
	return SpanData{}
}

// TestSpanTree: IDs, parents, scopes, kinds, and the order of Spans and
// Ended.
func TestSpanTree(t *testing.T) {
	tp := NewTracerProvider()
	tr := tp.Tracer("lib", trace.WithInstrumentationVersion("v1.2"), trace.WithSchemaURL("https://schema"))
	ctx, root := tr.Start(context.Background(), "root")
	_, child := tr.Start(ctx, "child", trace.WithSpanKind(trace.SpanKindServer))
	_, fresh := tr.Start(ctx, "fresh", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKind(99)))
	if !root.IsRecording() || !child.IsRecording() || !fresh.IsRecording() || trace.SpanFromContext(ctx) != root {
		t.Fatal("started spans are not recording, or not in the returned context")
	}
	child.End()
	root.End()

	spans := tp.Spans()
	if got := names(spans); got != "[root child fresh]" {
		t.Errorf("Spans() = %s, want start order", got)
	}
	if got := names(tp.Ended()); got != "[child root]" {
		t.Errorf("Ended() = %s, want end order without the unended span", got)
	}
	r, c, f := spanNamed(t, spans, "root"), spanNamed(t, spans, "child"), spanNamed(t, spans, "fresh")
	seen := map[trace.SpanID]bool{}
	for _, s := range spans {
		sc := s.SpanContext
		if !sc.IsValid() || !sc.IsSampled() || seen[sc.SpanID()] {
			t.Errorf("%s: span context %v: want valid, sampled, unique", s.Name, sc)
		}
		seen[sc.SpanID()] = true
		if want := (Scope{"lib", "v1.2", "https://schema"}); s.Scope != want {
			t.Errorf("%s: scope %+v, want %+v", s.Name, s.Scope, want)
		}
	}
	if r.Parent.IsValid() || f.Parent.IsValid() {
		t.Errorf("root parents %v and %v, want none", r.Parent, f.Parent)
	}
	if !c.Parent.Equal(r.SpanContext) || c.SpanContext.TraceID() != r.SpanContext.TraceID() {
		t.Errorf("child: parent %v trace %v, want root %v", c.Parent, c.SpanContext.TraceID(), r.SpanContext)
	}
	if f.SpanContext.TraceID() == r.SpanContext.TraceID() {
		t.Error("WithNewRoot kept the parent's trace")
	}
	if r.Kind != trace.SpanKindInternal || c.Kind != trace.SpanKindServer || f.Kind != trace.SpanKindInternal {
		t.Errorf("kinds %v %v %v, want internal (default), server, internal (invalid)", r.Kind, c.Kind, f.Kind)
	}
	if !r.Ended || f.Ended || !f.End.IsZero() {
		t.Errorf("ended: root %v, fresh %v (end %v)", r.Ended, f.Ended, f.End)
	}
	if child.TracerProvider() != tp {
		t.Error("a span's TracerProvider is not its provider")
	}
}

// kvString writes attributes as key=TYPE:value, in order.
func kvString(kvs []attribute.KeyValue) string {
	var out []string
	for _, kv := range kvs {
		out = append(out, fmt.Sprintf("%s=%s:%s", kv.Key, kv.Value.Type(), kv.Value.String()))
	}
	return strings.Join(out, " ")
}

func names(spans []SpanData) string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return fmt.Sprint(out)
}

// TestSpanTimes: start, end and event times default to now (the fake clock
// here) and honour trace.WithTimestamp.
func TestSpanTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := NewTracerProvider()
		t0 := time.Now()
		at := func(d time.Duration) time.Time { return t0.Add(d) }
		_, a := tp.Tracer("t").Start(context.Background(), "a")
		_, b := tp.Tracer("t").Start(context.Background(), "b", trace.WithTimestamp(at(-time.Minute)))
		time.Sleep(time.Second)
		a.AddEvent("now")
		b.AddEvent("given", trace.WithTimestamp(at(time.Hour)), trace.WithAttributes(attribute.Int("n", 1)))
		time.Sleep(time.Second)
		a.End()
		b.End(trace.WithTimestamp(at(5 * time.Second)))

		got := tp.Ended()
		for _, c := range []struct {
			what      string
			got, want time.Time
		}{
			{"a start", got[0].Start, at(0)},
			{"a event", got[0].Events[0].Time, at(time.Second)},
			{"a end", got[0].End, at(2 * time.Second)},
			{"b start", got[1].Start, at(-time.Minute)},
			{"b event", got[1].Events[0].Time, at(time.Hour)},
			{"b end", got[1].End, at(5 * time.Second)},
		} {
			if !c.got.Equal(c.want) {
				t.Errorf("%s at %v, want %v", c.what, c.got.Sub(t0), c.want.Sub(t0))
			}
		}
		if v, ok := got[1].Events[0].Attr("n"); !ok || v.AsInt64() != 1 {
			t.Errorf("event attribute n = %v (present %v), want 1", v, ok)
		}
	})
}

// TestSpanAttributes: a key set again keeps its place and takes the new
// value; invalid attributes are dropped; start attributes come first.
func TestSpanAttributes(t *testing.T) {
	tp := NewTracerProvider()
	_, s := tp.Tracer("t").Start(context.Background(), "s", trace.WithAttributes(attribute.String("a", "1"), attribute.Bool("b", true)))
	s.SetAttributes(attribute.Int("c", 3), attribute.String("a", "2"), attribute.String("", "invalid"))
	s.End()
	s.SetAttributes(attribute.String("late", "x"))
	got := kvString(tp.Ended()[0].Attributes)
	if want := "a=STRING:2 b=BOOL:true c=INT64:3"; got != want {
		t.Errorf("attributes %s, want %s", got, want)
	}
	if v, ok := tp.Ended()[0].Attr("a"); !ok || v.AsString() != "2" {
		t.Errorf("Attr(a) = %v, %v", v, ok)
	}
	if _, ok := tp.Ended()[0].Attr("late"); ok {
		t.Error("attribute set after End was recorded")
	}
}

// TestSpanStatus: Ok is final, Error keeps its description, Unset and Ok
// none, and nothing changes after End.
func TestSpanStatus(t *testing.T) {
	type set struct {
		code codes.Code
		desc string
	}
	for _, c := range []struct {
		name string
		sets []set
		want Status
	}{
		{"none", nil, Status{}},
		{"error", []set{{codes.Error, "boom"}}, Status{codes.Error, "boom"}},
		{"error then unset", []set{{codes.Error, "boom"}, {codes.Unset, ""}}, Status{codes.Error, "boom"}},
		{"error twice", []set{{codes.Error, "a"}, {codes.Error, "b"}}, Status{codes.Error, "b"}},
		{"ok drops its description", []set{{codes.Ok, "fine"}}, Status{codes.Ok, ""}},
		{"ok is final", []set{{codes.Ok, ""}, {codes.Error, "late"}}, Status{codes.Ok, ""}},
		{"error then ok", []set{{codes.Error, "x"}, {codes.Ok, ""}}, Status{codes.Ok, ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp := NewTracerProvider()
			_, s := tp.Tracer("t").Start(context.Background(), "s")
			for _, st := range c.sets {
				s.SetStatus(st.code, st.desc)
			}
			s.End()
			s.SetStatus(codes.Error, "after end")
			if got := tp.Ended()[0].Status; got != c.want {
				t.Errorf("status %+v, want %+v", got, c.want)
			}
		})
	}
}

type testError struct{}

func (testError) Error() string { return "it broke" }

// TestSpanAfterEnd: an ended span stops recording; End, events, links,
// names, errors and attributes after it change nothing.
func TestSpanAfterEnd(t *testing.T) {
	tp := NewTracerProvider()
	_, s := tp.Tracer("t").Start(context.Background(), "s")
	s.RecordError(testError{}, trace.WithAttributes(attribute.Int("try", 2)))
	s.RecordError(nil)
	s.AddLink(trace.Link{SpanContext: s.SpanContext()})
	s.SetName("s2")
	s.End(trace.WithTimestamp(time.Unix(10, 0)))
	if s.IsRecording() {
		t.Error("recording after End")
	}
	s.End(trace.WithTimestamp(time.Unix(20, 0)))
	s.AddEvent("late")
	s.RecordError(errors.New("late"))
	s.AddLink(trace.Link{})
	s.SetName("renamed")
	got := tp.Ended()
	if len(got) != 1 {
		t.Fatalf("%d ended spans after two Ends, want 1", len(got))
	}
	d := got[0]
	if d.Name != "s2" || !d.End.Equal(time.Unix(10, 0)) || len(d.Links) != 1 || len(d.Events) != 1 {
		t.Fatalf("after End: name %q end %v, %d links, %d events; want s2, 10s, 1, 1", d.Name, d.End.Unix(), len(d.Links), len(d.Events))
	}
	ev := d.Events[0]
	for k, want := range map[attribute.Key]string{"exception.type": "oteltest.testError", "exception.message": "it broke", "try": "2"} {
		if v, ok := ev.Attr(k); !ok || v.String() != want {
			t.Errorf("exception event %s = %q (present %v), want %q", k, v.String(), ok, want)
		}
	}
	if ev.Name != "exception" {
		t.Errorf("RecordError event %q, want exception", ev.Name)
	}
}

// TestSpansAreCopies: changing what Spans returned changes nothing
// recorded.
func TestSpansAreCopies(t *testing.T) {
	tp := NewTracerProvider()
	_, s := tp.Tracer("t").Start(context.Background(), "s", trace.WithAttributes(attribute.Int("n", 1)))
	s.AddEvent("e", trace.WithAttributes(attribute.Int("m", 1)))
	got := tp.Spans()
	got[0].Attributes[0] = attribute.Int("n", 2)
	got[0].Events[0].Attributes[0] = attribute.Int("m", 2)
	got[0].Events[0].Name = "changed"
	again := tp.Spans()[0]
	if v, _ := again.Attr("n"); v.AsInt64() != 1 {
		t.Errorf("span attribute changed through a copy: %v", again.Attributes)
	}
	if v, _ := again.Events[0].Attr("m"); v.AsInt64() != 1 || again.Events[0].Name != "e" {
		t.Errorf("event changed through a copy: %+v", again.Events[0])
	}
}

func sprint(vs ...any) string { return strings.TrimSuffix(fmt.Sprintln(vs...), "\n") }

// TestEventLimit: with WithEventLimit(n) a span keeps its n latest events
// and counts the rest; without it, every one.
func TestEventLimit(t *testing.T) {
	for _, c := range []struct {
		limit       int
		want        string
		wantDropped int
	}{{0, "[0 1 2 3 4]", 0}, {-1, "[0 1 2 3 4]", 0}, {2, "[3 4]", 3}, {5, "[0 1 2 3 4]", 0}} {
		tp := NewTracerProvider(WithEventLimit(c.limit), nil)
		_, s := tp.Tracer("t").Start(context.Background(), "s")
		for i := range 5 {
			s.AddEvent(fmt.Sprint(i))
		}
		d := tp.Spans()[0]
		var got []string
		for _, e := range d.Events {
			got = append(got, e.Name)
		}
		if fmt.Sprint(got) != c.want || d.DroppedEvents != c.wantDropped {
			t.Errorf("limit %d: events %v, %d dropped; want %s, %d", c.limit, got, d.DroppedEvents, c.want, c.wantDropped)
		}
	}
}
