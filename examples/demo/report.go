package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// A wait is how long a request or job waited for its seat. stillWaiting
// means it never got one during the run: the real wait is longer.
type wait struct {
	d            time.Duration
	stillWaiting bool
}

func (w wait) String() string {
	s := formatDuration(w.d)
	if w.stillWaiting {
		s += "+"
	}
	return s
}

// summary is one caller's line of the table.
type summary struct {
	asked, done int     // requests (or jobs) that reached the server; finished ones
	p50, p99    wait    // waits for a seat
	longest     wait    // the longest wait
	seatShare   float64 // of all seat time in the run, in [0, 1]
}

// end is when the run's load stopped.
func (r *result) end() time.Time { return r.start.Add(r.duration) }

// waitOf is how long rec waited for a seat, counting up to the end of the
// run if it never got one.
func (r *result) waitOf(rec record) wait {
	if !rec.started.IsZero() && rec.started.Before(r.end()) {
		return wait{d: rec.started.Sub(rec.arrived)}
	}
	until := r.end()
	if !rec.ended.IsZero() && rec.ended.Before(until) {
		until = rec.ended
	}
	return wait{d: until.Sub(rec.arrived), stillWaiting: true}
}

// seatTime is how long rec held a seat between from and to.
func (r *result) seatTime(rec record, from, to time.Time) time.Duration {
	if rec.started.IsZero() {
		return 0
	}
	ended := rec.ended
	if ended.IsZero() || ended.After(r.end()) {
		ended = r.end()
	}
	a, b := rec.started, ended
	if a.Before(from) {
		a = from
	}
	if b.After(to) {
		b = to
	}
	if b.Before(a) {
		return 0
	}
	return b.Sub(a)
}

func (r *result) summarize(client string) summary {
	var s summary
	var waits []wait
	var held time.Duration
	for _, rec := range r.records {
		if rec.client != client {
			continue
		}
		s.asked++
		if rec.done && !rec.ended.After(r.end()) {
			s.done++
		}
		waits = append(waits, r.waitOf(rec))
		held += r.seatTime(rec, r.start, r.end())
	}
	slices.SortFunc(waits, func(a, b wait) int { return int(a.d - b.d) })
	s.p50, s.p99 = percentile(waits, 0.50), percentile(waits, 0.99)
	if len(waits) > 0 {
		s.longest = waits[len(waits)-1]
	}
	s.seatShare = held.Seconds() / (float64(r.capacity) * r.duration.Seconds())
	return s
}

// idleShare is the part of all seat time no client used, given every
// client's summary.
func (r *result) idleShare(sums map[string]summary) float64 {
	used := 0.0
	for _, c := range clients {
		used += sums[c].seatShare
	}
	return max(0, 1-used)
}

// percentile returns the nearest-rank p-th percentile of sorted waits.
func percentile(sorted []wait, p float64) wait {
	if len(sorted) == 0 {
		return wait{}
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	default:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
}

// What each caller does, for the table.
var clientDescriptions = map[string]string{
	clientHeavy:      "heavy (1000 clones at once)",
	clientLight:      "light (clones, one by one)",
	clientUser:       "user (fetch burst midway)",
	clientBackground: "background (repack, pull)",
}

// Column widths of the table.
const (
	nameWidth  = 28
	groupWidth = 46 // done, p50, p99, share of one run
)

// writeTable writes the side-by-side comparison of the runs and a verdict.
func writeTable(w io.Writer, cfg config, results []*result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "The same %v of load, behind %d seats, twice:\n\n", cfg.Duration, cfg.Capacity)
	fmt.Fprintf(&b, "%-*s", nameWidth, "")
	for _, r := range results {
		fmt.Fprintf(&b, "%-*s", groupWidth, "── "+r.name+" "+strings.Repeat("─", groupWidth-len(r.name)-6))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "%-*s", nameWidth, "client")
	for range results {
		fmt.Fprintf(&b, "%-11s%-10s%-10s%-15s", "done", "p50 wait", "p99 wait", "seat share")
	}
	b.WriteString("\n")

	sums := make([]map[string]summary, len(results))
	for i, r := range results {
		sums[i] = make(map[string]summary)
		for _, c := range clients {
			sums[i][c] = r.summarize(c)
		}
	}
	for _, c := range clients {
		fmt.Fprintf(&b, "%-*s", nameWidth, clientDescriptions[c])
		for i := range results {
			s := sums[i][c]
			fmt.Fprintf(&b, "%-11s%-10s%-10s%-15s", fmt.Sprintf("%d/%d", s.done, s.asked), s.p50, s.p99, percent(s.seatShare))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%-*s", nameWidth, "(idle seats)")
	for i, r := range results {
		fmt.Fprintf(&b, "%-31s%-15s", "", percent(r.idleShare(sums[i])))
	}
	b.WriteString("\n\n")
	row := func(label string, cell func(i int) string) {
		fmt.Fprintf(&b, "%-*s", nameWidth, label)
		for i := range results {
			fmt.Fprintf(&b, "%-*s", groupWidth, cell(i))
		}
		b.WriteString("\n")
	}
	row("conflict violations", func(i int) string { return fmt.Sprint(results[i].violations) })
	row("background: longest wait", func(i int) string { return sums[i][clientBackground].longest.String() })
	row("background: jobs done", func(i int) string {
		s := sums[i][clientBackground]
		return fmt.Sprintf("%d of %d", s.done, s.asked)
	})
	b.WriteString(`
done        requests (jobs) finished during the run / that reached the server.
wait        from reaching the server to getting a seat; "+" means it was still
            waiting when the run ended, so the real wait is longer.
seat share  part of all seat time (seats x run time) the client used.
conflict violations
            times a repack or pull started on a repository in use, or a
            clone or fetch on one a repack or pull held (counted in the
            handlers).
`)
	for _, r := range results {
		for _, err := range r.errors {
			fmt.Fprintf(&b, "\nunexpected error in the %s run: %v", r.name, err)
		}
	}
	if len(results) == 2 {
		b.WriteString("\nVerdict:\n")
		for _, line := range verdict(results, sums[0], sums[1]) {
			b.WriteString(wrap(line, 78, "  - ", "    ") + "\n")
		}
	}
	// Drop the padding after the last column.
	lines := strings.Split(b.String(), "\n")
	for i, line := range lines {
		lines[i] = strings.TrimRight(line, " ")
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n"))
	return err
}

// verdict says in plain words what the table shows, comparing the
// semaphore run (sem) with the fairseat run (fair).
func verdict(results []*result, sem, fair map[string]summary) []string {
	var lines []string
	sl, fl := sem[clientLight], fair[clientLight]
	if fl.p99.d < sl.p99.d {
		lines = append(lines, fmt.Sprintf(
			"The light client waited up to %v for a clone behind the plain semaphore (%d of %d done), "+
				"because it queued behind the heavy client's burst. Behind fairseat it waited at most %v (%d of %d done): "+
				"a caller that has used little goes ahead of one that has used a lot.",
			sl.p99, sl.done, sl.asked, fl.p99, fl.done, fl.asked))
	} else {
		lines = append(lines, fmt.Sprintf(
			"The light client's worst wait was %v behind the semaphore and %v behind fairseat: with this load the heavy client did not get in its way.",
			sl.p99, fl.p99))
	}
	su, fu := sem[clientUser], fair[clientUser]
	lines = append(lines, fmt.Sprintf(
		"The user's burst of fetches midway: p99 wait %v behind the semaphore, %v behind fairseat.", su.p99, fu.p99))
	sv, fv := results[0].violations, results[1].violations
	switch {
	case fv == 0 && sv > 0:
		lines = append(lines, fmt.Sprintf(
			"The semaphore let a repack or pull run beside other work on its repository %d times (in a real cache, a corrupt "+
				"clone or repository). fairseat never did: clones and fetches of a repository share it, and a repack or pull "+
				"waits for them, holding no seat, then runs alone.", sv))
	case fv == 0:
		lines = append(lines, "Neither run let a writer run beside other work on its repository.")
	default:
		lines = append(lines, fmt.Sprintf("fairseat let a writer run beside other work on its repository %d times: that is a bug.", fv))
	}
	sb, fb := sem[clientBackground], fair[clientBackground]
	lines = append(lines, fmt.Sprintf(
		"Background maintenance: behind the semaphore %d of %d jobs ran and one waited %v; "+
			"behind fairseat %d of %d ran and the longest wait was %v, because waiting jobs age up to the requests' priority.",
		sb.done, sb.asked, sb.longest, fb.done, fb.asked, fb.longest))
	lines = append(lines, fmt.Sprintf(
		"The heavy client still had %s of the seats with fairseat (%s with the semaphore): "+
			"fairness holds a greedy caller back only while others are waiting.",
		percent(fair[clientHeavy].seatShare), percent(sem[clientHeavy].seatShare)))
	if repo, n := results[1].mostWaitedRepo(clientHeavy); n > 1 && results[1].idleShare(fair) >= 0.05 {
		lines = append(lines, fmt.Sprintf(
			"Seats stood idle in the fairseat run while the heavy client still waited: %d of its waiting clones were of %s, "+
				"held back while a repack or pull of it ran or waited its turn.",
			n, repo))
	}
	return lines
}

// mostWaitedRepo returns the repository with the most requests of client
// still waiting at the end of the run, and how many there were.
func (r *result) mostWaitedRepo(client string) (repo string, n int) {
	waiting := make(map[string]int)
	for _, rec := range r.records {
		if rec.client == client && r.waitOf(rec).stillWaiting {
			waiting[rec.repo]++
		}
	}
	for name, count := range waiting {
		if count > n || (count == n && name < repo) {
			repo, n = name, count
		}
	}
	return repo, n
}

// percent formats a share in [0, 1]: small ones with a decimal, so that a
// light caller's share does not read as nothing.
func percent(f float64) string {
	if f < 0.1 {
		return fmt.Sprintf("%.1f%%", 100*f)
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

// wrap breaks s into lines of at most width characters, the first starting
// with first and the others with rest.
func wrap(s string, width int, first, rest string) string {
	var b strings.Builder
	line := first
	for _, word := range strings.Fields(s) {
		if len(line)+1+len(word) > width && strings.TrimSpace(line) != strings.TrimSpace(first) {
			b.WriteString(line + "\n")
			line = rest
		}
		if line != first && line != rest {
			line += " "
		}
		line += word
	}
	b.WriteString(line)
	return b.String()
}
