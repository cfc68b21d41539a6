package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/fairseat/fairseat/benchmarks/peer"
)

// svg draws two bar charts by hand: each peer's seats per flow in the
// 12/4/2 closed loop (ideal 1.33 marked), and the light client's p99 wait
// under the flood (log scale).
func (r *report) svg() string {
	const (
		width, height = 900, 640
		left, right   = 70, 20
		panel         = 230
		top1, top2    = 50, 370
	)
	peers := peer.All()
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	slot := float64(width-left-right) / float64(len(peers))
	colors := []string{"#d62728", "#1f77b4", "#2ca02c"}

	// Panel 1: seats per flow.
	w(`<text x="%d" y="%d" font-size="15" font-weight="bold">12 / 4 / 2 outstanding requests on 4 seats: seats held per flow (fair = 1.33 each)</text>`+"\n", left, top1-25)
	maxSeats := 4.0
	for _, fs := range r.fair.three {
		for _, f := range fs {
			maxSeats = math.Max(maxSeats, f.Seats)
		}
	}
	y1 := func(v float64) float64 { return float64(top1+panel) - v/maxSeats*panel }
	for v := 0.0; v <= maxSeats+1e-9; v++ {
		w(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%.0f</text>`+"\n", left, width-right, y1(v), y1(v), left-6, y1(v)+4, v)
	}
	w(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="black" stroke-dasharray="6 4"/>`+"\n", left, width-right, y1(4.0/3), y1(4.0/3))
	for i, p := range peers {
		fs := r.fair.three[p.Name]
		bw := slot * 0.8 / 3
		for j, f := range fs {
			x := float64(left) + float64(i)*slot + slot*0.1 + float64(j)*bw
			w(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.2f seats</title></rect>`+"\n",
				x, y1(f.Seats), bw-1, float64(top1+panel)-y1(f.Seats), colors[j%3], p.Name, f.Key, f.Seats)
		}
		w(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", float64(left)+float64(i)*slot+slot/2, top1+panel+16, p.Name)
	}
	for j, name := range []string{"heavy (12)", "medium (4)", "light (2)"} {
		w(`<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", left+10+j*110, top1+panel+28, colors[j], left+26+j*110, top1+panel+38, name)
	}
	w(`<text x="%d" y="%d">dashed: fair share</text>`+"\n", left+350, top1+panel+38)

	// Panel 2: p99 wait, log scale from 10 µs to the largest.
	w(`<text x="%d" y="%d" font-size="15" font-weight="bold">Light client's p99 wait while one client floods 1000 requests (log scale)</text>`+"\n", left, top2-25)
	lo, hi := 1e4, 1e4
	for _, f := range r.fair.flood {
		hi = math.Max(hi, float64(f.LightP99))
	}
	hi = math.Pow(10, math.Ceil(math.Log10(hi)))
	y2 := func(v float64) float64 {
		v = math.Max(v, lo)
		return float64(top2+panel) - (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*panel
	}
	for v := lo; v <= hi*1.0001; v *= 10 {
		w(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left, width-right, y2(v), y2(v), left-6, y2(v)+4, ns(v))
	}
	for i, p := range peers {
		f, ok := r.fair.flood[p.Name]
		if !ok {
			continue
		}
		v := float64(f.LightP99)
		x := float64(left) + float64(i)*slot + slot*0.25
		w(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#9467bd"><title>%s: p99 %s</title></rect>`+"\n", x, y2(v), slot*0.5, float64(top2+panel)-y2(v), p.Name, ns(v))
		w(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x+slot*0.25, y2(v)-4, ns(v))
		w(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", float64(left)+float64(i)*slot+slot/2, top2+panel+16, p.Name)
	}
	w("</svg>\n")
	return b.String()
}
