package oteltest

import (
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// SpanData is what a span recorded, copied out of the provider. Its zero
// value is an empty, unended span; it is a plain value, safe to share once
// returned.
type SpanData struct {
	Name        string
	Scope       Scope             // of the tracer that started it
	Kind        trace.SpanKind    // Internal when not given
	SpanContext trace.SpanContext // valid and sampled
	Parent      trace.SpanContext // the zero (invalid) SpanContext for a root
	Start, End  time.Time         // End is zero until Ended
	Ended       bool
	Attributes  []attribute.KeyValue // in the order first set, one per key
	Events      []Event
	// DroppedEvents counts the oldest events dropped by WithEventLimit.
	DroppedEvents int
	Links         []trace.Link
	Status        Status
}

// Event is a span event, copied out like SpanData. Its zero value is an
// empty event.
type Event struct {
	Name       string
	Time       time.Time
	Attributes []attribute.KeyValue
}

// Status is a span's status. Its zero value is Unset.
type Status struct {
	Code        codes.Code
	Description string // only with codes.Error
}

// Attr returns the value of the span attribute k, and whether it is set.
func (d SpanData) Attr(k attribute.Key) (attribute.Value, bool) { return lookup(d.Attributes, k) }

// Attr returns the value of the event attribute k, and whether it is set.
func (e Event) Attr(k attribute.Key) (attribute.Value, bool) { return lookup(e.Attributes, k) }

func lookup(kvs []attribute.KeyValue, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range kvs {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func (d SpanData) clone() SpanData {
	d.Attributes = slices.Clone(d.Attributes)
	d.Links = slices.Clone(d.Links)
	d.Events = slices.Clone(d.Events)
	for i := range d.Events {
		d.Events[i].Attributes = slices.Clone(d.Events[i].Attributes)
	}
	return d
}

// span is a recording trace.Span. tp and data.SpanContext never change
// after Start; the rest of data is guarded by tp.mu and never changes once
// data.Ended is set.
type span struct {
	noop.Span
	tp   *TracerProvider
	data SpanData
}

// setAttributesLocked sets kvs, a key set again keeping its place.
func (s *span) setAttributesLocked(kvs []attribute.KeyValue) {
	for _, kv := range kvs {
		if !kv.Valid() {
			continue
		}
		if i := slices.IndexFunc(s.data.Attributes, func(a attribute.KeyValue) bool { return a.Key == kv.Key }); i >= 0 {
			s.data.Attributes[i] = kv
		} else {
			s.data.Attributes = append(s.data.Attributes, kv)
		}
	}
}

// update runs f under the provider's lock unless the span has ended.
func (s *span) update(f func()) {
	s.tp.mu.Lock()
	defer s.tp.mu.Unlock()
	if !s.data.Ended {
		f()
	}
}

func (s *span) SpanContext() trace.SpanContext { return s.data.SpanContext }

func (s *span) IsRecording() bool {
	s.tp.mu.Lock()
	defer s.tp.mu.Unlock()
	return !s.data.Ended
}

func (s *span) End(opts ...trace.SpanEndOption) {
	cfg := trace.NewSpanEndConfig(opts...)
	end := cfg.Timestamp()
	if end.IsZero() {
		end = time.Now()
	}
	s.update(func() {
		s.data.End, s.data.Ended = end, true
		s.tp.ended = append(s.tp.ended, s)
	})
}

func (s *span) AddEvent(name string, opts ...trace.EventOption) {
	cfg := trace.NewEventConfig(opts...) // its time is now unless given
	s.update(func() { s.addEventLocked(name, cfg.Timestamp(), cfg.Attributes()) })
}

func (s *span) addEventLocked(name string, at time.Time, kvs []attribute.KeyValue) {
	s.data.Events = append(s.data.Events, Event{Name: name, Time: at, Attributes: slices.Clone(kvs)})
	if limit := s.tp.eventLimit; limit > 0 && len(s.data.Events) > limit {
		// Reslicing drops the oldest in O(1); when append next grows the
		// array it copies only the events kept, so memory stays bounded.
		s.data.Events = s.data.Events[1:]
		s.data.DroppedEvents++
	}
}

func (s *span) RecordError(err error, opts ...trace.EventOption) {
	if err == nil {
		return
	}
	cfg := trace.NewEventConfig(opts...)
	kvs := append([]attribute.KeyValue{
		attribute.String("exception.type", fmt.Sprintf("%T", err)),
		attribute.String("exception.message", err.Error()),
	}, cfg.Attributes()...)
	s.update(func() { s.addEventLocked("exception", cfg.Timestamp(), kvs) })
}

func (s *span) AddLink(l trace.Link) {
	s.update(func() { s.data.Links = append(s.data.Links, l) })
}

// SetStatus sets the status unless it is already of a higher code
// (Ok > Error > Unset, as the API says).
func (s *span) SetStatus(code codes.Code, description string) {
	s.update(func() {
		if s.data.Status.Code > code {
			return
		}
		s.data.Status = Status{Code: code}
		if code == codes.Error {
			s.data.Status.Description = description
		}
	})
}

func (s *span) SetName(name string) {
	s.update(func() { s.data.Name = name })
}

func (s *span) SetAttributes(kvs ...attribute.KeyValue) {
	s.update(func() { s.setAttributesLocked(kvs) })
}

func (s *span) TracerProvider() trace.TracerProvider { return s.tp }
