package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// The chart: one panel per run, each a stacked area of the share of seats
// each client held over time. Hand-written SVG, so the demo needs nothing
// beyond the standard library to draw it.
const (
	chartWidth  = 900
	panelHeight = 250
	plotLeft    = 60
	plotWidth   = 800
	plotTop     = 40  // within a panel
	plotHeight  = 170 // within a panel
	chartBins   = 100
	legendRoom  = 40
)

var clientColors = map[string]string{
	clientHeavy:      "#d62728",
	clientLight:      "#2ca02c",
	clientUser:       "#1f77b4",
	clientBackground: "#9467bd",
}

func writeSVGFile(path string, results []*result) error {
	var buf bytes.Buffer
	writeSVG(&buf, results)
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// writeSVG draws the chart of results to w.
func writeSVG(w io.Writer, results []*result) {
	height := len(results)*panelHeight + legendRoom
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, height, chartWidth, height)
	fmt.Fprintf(w, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartWidth, height)
	for i, r := range results {
		writePanel(w, r, i*panelHeight)
	}
	// Legend.
	y := len(results)*panelHeight + 15
	for i, c := range clients {
		x := plotLeft + i*200
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="14" height="14" fill="%s"/>`+"\n", x, y, clientColors[c])
		fmt.Fprintf(w, `<text x="%d" y="%d">%s</text>`+"\n", x+20, y+12, escape(clientDescriptions[c]))
	}
	fmt.Fprintln(w, `</svg>`)
}

// writePanel draws one run's panel, top pixels down.
func writePanel(w io.Writer, r *result, top int) {
	shares := r.sharesOverTime(chartBins)
	x := func(bin float64) float64 { return plotLeft + bin*plotWidth/chartBins }
	y := func(share float64) float64 { return float64(top+plotTop+plotHeight) - min(share, 1)*plotHeight }

	fmt.Fprintf(w, `<text x="%d" y="%d" font-size="15" font-weight="bold">%s: share of the %d seats per client over time</text>`+"\n",
		plotLeft, top+25, escape(r.name), r.capacity)
	// Stacked areas, first client at the bottom. Each bin is drawn flat.
	below := make([]float64, chartBins)
	for _, c := range clients {
		above := make([]float64, chartBins)
		var upper, lower []string
		for b := range chartBins {
			above[b] = below[b] + shares[b][c]
			upper = append(upper, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(float64(b)), y(above[b]), x(float64(b+1)), y(above[b])))
			lower = append(lower, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(float64(b+1)), y(below[b]), x(float64(b)), y(below[b])))
		}
		for i, j := 0, len(lower)-1; i < j; i, j = i+1, j-1 {
			lower[i], lower[j] = lower[j], lower[i]
		}
		fmt.Fprintf(w, `<polygon fill="%s" fill-opacity="0.85" points="%s %s"/>`+"\n",
			clientColors[c], strings.Join(upper, " "), strings.Join(lower, " "))
		below = above
	}
	// Axes and grid.
	for _, s := range []float64{0, 0.5, 1} {
		fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999" stroke-dasharray="3,3"/>`+"\n",
			plotLeft, y(s), plotLeft+plotWidth, y(s))
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%.0f%%</text>`+"\n", plotLeft-6, y(s)+4, 100*s)
	}
	for i := 0; i <= 4; i++ {
		at := r.duration * time.Duration(i) / 4
		px := plotLeft + i*plotWidth/4
		fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n",
			px, top+plotTop+plotHeight+16, escape(fmt.Sprintf("%gs", at.Round(100*time.Millisecond).Seconds())))
	}
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n",
		plotLeft, top+plotTop, plotWidth, plotHeight)
}

// sharesOverTime cuts the run into bins and returns, for each bin, the
// share of the seats each client held during it.
func (r *result) sharesOverTime(bins int) []map[string]float64 {
	width := r.duration / time.Duration(bins)
	out := make([]map[string]float64, bins)
	for b := range out {
		out[b] = make(map[string]float64)
	}
	if width <= 0 {
		return out
	}
	seatTimeInBin := float64(r.capacity) * width.Seconds()
	for _, rec := range r.records {
		if rec.started.IsZero() {
			continue
		}
		first := int(rec.started.Sub(r.start) / width)
		for b := max(first, 0); b < bins; b++ {
			from := r.start.Add(time.Duration(b) * width)
			held := r.seatTime(rec, from, from.Add(width))
			if held == 0 && from.After(rec.started) {
				break
			}
			out[b][rec.client] += held.Seconds() / seatTimeInBin
		}
	}
	return out
}

func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}
