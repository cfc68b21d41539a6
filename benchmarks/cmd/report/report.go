package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fairseat/fairseat/benchmarks/harness"
	"github.com/fairseat/fairseat/benchmarks/peer"
)

type report struct {
	machine   machine
	micro     map[[2]string]microResult
	fair      fairnessResults
	rounds    int
	benchtime time.Duration
	quick     bool
	elapsed   time.Duration
	args      []string
}

const ref = "fairseat"

// row is one line of the table: a label and one cell per peer.
type row struct {
	label string
	cells map[string]string
}

// ratioRow formats values with their ratio to fairseat's.
func ratioRow(label string, vals map[string]float64, format func(float64) string) row {
	r := row{label: label, cells: map[string]string{}}
	base, hasBase := vals[ref]
	for name, v := range vals {
		c := format(v)
		if hasBase && base != 0 && name != ref {
			c += fmt.Sprintf(" (%s×)", trim(v/base))
		}
		r.cells[name] = c
	}
	return r
}

func trim(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

func ns(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.2f ms", x/1e6)
	case x >= 1e4:
		return fmt.Sprintf("%.1f µs", x/1e3)
	case x >= 1e3:
		return fmt.Sprintf("%.2f µs", x/1e3)
	default:
		return fmt.Sprintf("%.0f ns", x)
	}
}

func (r *report) microVals(group string, f func(microResult) float64) map[string]float64 {
	vals := map[string]float64{}
	for _, p := range peer.All() {
		if m, ok := r.micro[[2]string{group, p.Name}]; ok {
			vals[p.Name] = f(m)
		}
	}
	return vals
}

func (r *report) rows() []row {
	nsOp := func(m microResult) float64 { return m.nsPerOp }
	allocs := func(m microResult) float64 { return m.allocsPerOp }
	rate := func(m microResult) float64 { return m.perSecond }
	af := func(x float64) string { return trim(x) }
	rf := func(x float64) string { return fmt.Sprintf("%.2fM/s", x/1e6) }

	rows := []row{
		ratioRow("uncontended Do, ns/op", r.microVals("uncontended", nsOp), ns),
		ratioRow("uncontended Do, allocs/op", r.microVals("uncontended", allocs), af),
	}
	for _, g := range harness.SaturatedGoroutines {
		rows = append(rows, ratioRow(fmt.Sprintf("saturated, 4 seats, %d goroutines, admissions/s", g), r.microVals(fmt.Sprintf("saturated g=%d", g), rate), rf))
	}
	rows = append(rows, ratioRow("saturated, 64 goroutines, allocs/op", r.microVals("saturated g=64", allocs), af))
	for _, n := range harness.KeyCounts {
		rows = append(rows, ratioRow(fmt.Sprintf("%d active keys, ns/admission", n), r.microVals(fmt.Sprintf("keys=%d", n), nsOp), ns))
	}
	first, last := harness.KeyCounts[0], harness.KeyCounts[len(harness.KeyCounts)-1]
	lo, hi := r.microVals(fmt.Sprintf("keys=%d", first), nsOp), r.microVals(fmt.Sprintf("keys=%d", last), nsOp)
	growth := map[string]float64{}
	for k, v := range hi {
		if lo[k] > 0 {
			growth[k] = v / lo[k]
		}
	}
	rows = append(rows, ratioRow(fmt.Sprintf("growth %d → %d keys", first, last), growth, func(x float64) string { return trim(x) + "×" }))

	// Fairness.
	three := row{label: "12/4/2 flows on 4 seats: seats held (ideal 1.33 each)", cells: map[string]string{}}
	dev := map[string]float64{}
	for name, fs := range r.fair.three {
		var parts []string
		var worst float64
		for _, f := range fs {
			parts = append(parts, fmt.Sprintf("%.2f", f.Seats))
			worst = math.Max(worst, math.Abs(f.Seats-4.0/3))
		}
		three.cells[name] = strings.Join(parts, " / ")
		dev[name] = worst
	}
	devRow := row{label: "12/4/2 flows: largest deviation from 1.33 seats", cells: map[string]string{}}
	for name, d := range dev {
		devRow.cells[name] = fmt.Sprintf("%.2f", d) // a ratio to fairseat's near-zero deviation would mean nothing
	}
	rows = append(rows, three, devRow)
	weighted := row{label: "3:1 weighted pair: seats held (ideal 3.00 / 1.00)", cells: map[string]string{}}
	for _, p := range peer.All() {
		fs, ok := r.fair.weighted[p.Name]
		if !ok {
			weighted.cells[p.Name] = "n/a"
			continue
		}
		weighted.cells[p.Name] = fmt.Sprintf("%.2f / %.2f", fs[0].Seats, fs[1].Seats)
	}
	rows = append(rows, weighted)
	p99 := map[string]float64{}
	for name, f := range r.fair.flood {
		p99[name] = float64(f.LightP99)
	}
	rows = append(rows, ratioRow("1000-request flood: light client's p99 wait", p99, ns))

	// gRPC.
	grpcNs := r.microVals("grpc", nsOp)
	rows = append(rows, ratioRow("gRPC unary call over loopback, behind a tiny interceptor", grpcNs, ns))
	if none, ok := r.micro[[2]string{"grpc", "none"}]; ok {
		over := map[string]float64{}
		for k, v := range grpcNs {
			over[k] = v - none.nsPerOp
		}
		rows = append(rows, ratioRow(fmt.Sprintf("gRPC: added to %s with no admission", ns(none.nsPerOp)), over, ns))
		if fi, ok := r.micro[[2]string{"grpc", "fairseat-interceptors"}]; ok {
			rows = append(rows, row{label: "gRPC: fairseat's interceptors.UnaryServerInterceptor", cells: map[string]string{
				ref: fmt.Sprintf("%s (+%s)", ns(fi.nsPerOp), ns(fi.nsPerOp-none.nsPerOp)),
			}})
		}
	}
	return rows
}

// table renders rows as one Markdown table, peers as columns.
func (r *report) table() string {
	var b strings.Builder
	names := peer.Order
	b.WriteString("| measurement | " + strings.Join(names, " | ") + " |\n")
	b.WriteString("|---" + strings.Repeat("|---:", len(names)) + "|\n")
	for _, rw := range r.rows() {
		b.WriteString("| " + rw.label)
		for _, n := range names {
			c, ok := rw.cells[n]
			if !ok {
				c = "—"
			}
			b.WriteString(" | " + c)
		}
		b.WriteString(" |\n")
	}
	return b.String()
}
