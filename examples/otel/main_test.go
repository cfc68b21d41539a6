package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/fairseat/fairseat/admission"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The JSON the stdout exporters write, as far as the test reads it.
type (
	jsonKV struct {
		Key   string
		Value struct{ Value any }
	}
	jsonSpan struct {
		Name        string
		SpanContext struct{ SpanID string }
		Parent      struct{ SpanID string }
		Attributes  []jsonKV
		Events      []struct{ Name string }
	}
	jsonPoint struct {
		Attributes []jsonKV
		Count      uint64
		Sum, Value float64
	}
	jsonMetrics struct {
		ScopeMetrics []struct {
			Scope   struct{ Name string }
			Metrics []struct {
				Name string
				Data struct{ DataPoints []jsonPoint }
			}
		}
	}
)

func attr(kvs []jsonKV, key string) any {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value.Value
		}
	}
	return nil
}

// decode splits the export stream into its spans and its metrics (the last
// JSON value).
func decode(t *testing.T, export []byte) ([]jsonSpan, jsonMetrics) {
	t.Helper()
	var raws []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(export))
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("export is not a JSON stream: %v\n%s", err, export)
		}
		raws = append(raws, raw)
	}
	if len(raws) == 0 {
		t.Fatal("nothing exported")
	}
	spans := make([]jsonSpan, len(raws)-1)
	for i, raw := range raws[:len(raws)-1] {
		if err := json.Unmarshal(raw, &spans[i]); err != nil {
			t.Fatalf("span %d: %v", i, err)
		}
	}
	var m jsonMetrics
	if err := json.Unmarshal(raws[len(raws)-1], &m); err != nil {
		t.Fatalf("metrics: %v", err)
	}
	return spans, m
}

// TestRun runs the program on fake time and checks what it exported: the
// wait span under the caller's span, the events of the decisions made at
// arrival, and the wait histogram and request counter.
func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var summary, export bytes.Buffer
		if err := run(context.Background(), &summary, &export); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(summary.String()), "\n")
		if len(lines) != 3 || lines[0] != "repo-a for 203.0.113.7: admitted at once" ||
			!strings.HasPrefix(lines[1], "repo-c for 198.51.100.2: admission: queue full") ||
			lines[2] != "repo-b for 198.51.100.2: admitted when repo-a released its seat, after 10ms" {
			t.Errorf("summary:\n%s", summary.String())
		}

		spans, metrics := decode(t, export.Bytes())
		if len(spans) != 2 || spans[0].Name != "fairseat.admission.wait" || spans[1].Name != "GET /clone" {
			t.Fatalf("spans %+v, want the wait span, then the caller's", spans)
		}
		wait, caller := spans[0], spans[1]
		if wait.Parent.SpanID != caller.SpanContext.SpanID {
			t.Errorf("wait span's parent %s, want the caller's span %s", wait.Parent.SpanID, caller.SpanContext.SpanID)
		}
		// The second request was queued at once and admitted holdFor later,
		// give or take the program's 1 ms polling for it.
		if w, _ := attr(wait.Attributes, "fairseat.wait").(float64); attr(wait.Attributes, "fairseat.outcome") != "admitted" ||
			w < holdFor.Seconds() || w > (holdFor+time.Millisecond).Seconds() {
			t.Errorf("wait span attributes %+v, want admitted after %v", wait.Attributes, holdFor)
		}
		var events []string
		for _, e := range caller.Events {
			events = append(events, e.Name)
		}
		if want := []string{"fairseat.admitted", "fairseat.rejected"}; !slices.Equal(events, want) {
			t.Errorf("caller's span events %q, want %q", events, want)
		}

		if len(metrics.ScopeMetrics) != 1 || metrics.ScopeMetrics[0].Scope.Name != admission.ScopeName {
			t.Fatalf("metrics %+v, want one scope, %s", metrics, admission.ScopeName)
		}
		points := map[string][]jsonPoint{}
		for _, m := range metrics.ScopeMetrics[0].Metrics {
			points[m.Name] = m.Data.DataPoints
		}
		counts := map[string]uint64{}
		for _, p := range points["fairseat.queue.wait.duration"] {
			counts[attr(p.Attributes, "fairseat.result").(string)] += p.Count
		}
		if counts["admitted"] != 2 || counts["rejected_queue_full"] != 1 || len(counts) != 2 {
			t.Errorf("wait histogram counts %v, want admitted 2, rejected_queue_full 1", counts)
		}
		requests := map[string]float64{}
		for _, p := range points["fairseat.requests"] {
			requests[attr(p.Attributes, "fairseat.result").(string)] = p.Value
		}
		if requests["admitted"] != 2 || requests["rejected_queue_full"] != 1 {
			t.Errorf("fairseat.requests %v, want admitted 2, rejected_queue_full 1", requests)
		}
	})
}
