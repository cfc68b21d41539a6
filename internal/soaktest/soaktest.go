// Package soaktest holds what fairseat's soak tests share: how long they run
// and from which seed, read from the environment, and the summary each one
// prints, so that a long run's numbers read the same in every package.
//
// A soak runs for Short by default (the run inside go test) and for as long
// as FAIRSEAT_SOAK says (a time.ParseDuration string: "10m"), capped so that
// it ends before the test binary's -timeout. Its random operations come from
// a seed, FAIRSEAT_SOAK_SEED or else the clock, which it logs so that a
// failing run can be replayed (the operations each goroutine draws are
// replayed; their interleaving, being concurrent, is not).
//
// The package is imported by tests only; its functions are not safe to call
// from more than one goroutine at once, except Summary's methods, which are.
package soaktest

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// Environment variables read by Duration and Seed.
const (
	EnvDuration = "FAIRSEAT_SOAK"
	EnvSeed     = "FAIRSEAT_SOAK_SEED"
)

// Duration returns how long the soak runs: FAIRSEAT_SOAK if set, else short.
// It ends a minute before the test's deadline (or at half the time left,
// if that is sooner), so a long run never trips go test's -timeout. A
// malformed or non-positive FAIRSEAT_SOAK fails the test.
func Duration(t testing.TB, short time.Duration) time.Duration {
	t.Helper()
	d := short
	if v := os.Getenv(EnvDuration); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration such as 10m", EnvDuration, v)
		}
	}
	if dl, ok := deadline(t); ok {
		left := time.Until(dl)
		// Whole seconds (at least one), so that the log names the length
		// the soak runs: 30m with -timeout 60m ran a few milliseconds
		// short and logged "shortened from 30m0s to 30m0s".
		if limit := max(min(left-time.Minute, left/2).Truncate(time.Second), time.Second); d > limit {
			t.Logf("soak shortened from %v to %v to end before the test deadline (raise -timeout)", d, limit)
			d = limit
		}
	}
	return d
}

// deadline is t's deadline, when t is a *testing.T that has one.
func deadline(t testing.TB) (time.Time, bool) {
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		return tt.Deadline()
	}
	return time.Time{}, false
}

// Seed returns FAIRSEAT_SOAK_SEED if set, else a seed from the clock, and
// logs it with the line that replays the run.
func Seed(t testing.TB) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(EnvSeed); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: want an unsigned integer", EnvSeed, v)
		}
	}
	t.Logf("soak seed %d (replay with %s=%d)", seed, EnvSeed, seed)
	return seed
}

// Summary counts what a soak did. Its zero value is ready; its methods are
// safe for concurrent use.
type Summary struct {
	Operations atomic.Int64 // calls made: requests, submissions, control actions
	Faults     atomic.Int64 // faults injected: panics, errors, cancellations, deadlines, disconnects, stops
	Violations atomic.Int64 // invariant violations seen
	Lost       atomic.Int64 // outcomes lost: calls or jobs that never got exactly one outcome
}

// Log prints the summary as one Markdown table row (the README's
// Reliability table) under a header, with what ran and for how long.
func (s *Summary) Log(t testing.TB, what string, took time.Duration) {
	t.Helper()
	t.Logf("soak summary\n| soak | duration | operations | faults injected | invariant violations | outcomes lost |\n"+
		"| --- | --- | --- | --- | --- | --- |\n| %s | %v | %d | %d | %d | %d |",
		what, took.Round(time.Second), s.Operations.Load(), s.Faults.Load(), s.Violations.Load(), s.Lost.Load())
}

// Check fails t if the summary counts a violation or a lost outcome.
func (s *Summary) Check(t testing.TB) {
	t.Helper()
	if v, l := s.Violations.Load(), s.Lost.Load(); v != 0 || l != 0 {
		t.Errorf("%d invariant violations, %d outcomes lost", v, l)
	}
}

// Violationf records an invariant violation and reports it (the first few
// only, so that one broken invariant does not bury the log).
func (s *Summary) Violationf(t testing.TB, format string, args ...any) {
	t.Helper()
	if n := s.Violations.Add(1); n <= 10 {
		t.Errorf("violation: %s", fmt.Sprintf(format, args...))
	}
}

// Lostf records an outcome lost (or given twice) and reports it, as
// Violationf does.
func (s *Summary) Lostf(t testing.TB, format string, args ...any) {
	t.Helper()
	if n := s.Lost.Add(1); n <= 10 {
		t.Errorf("outcome lost: %s", fmt.Sprintf(format, args...))
	}
}

// Stops tracks the servers a soak stops under load, so that a transport
// error can be told from a fault: a call that overlapped a stop may fail
// at the transport, any other may not. Its zero value is ready; it is safe
// for concurrent use.
type Stops struct {
	active atomic.Int64 // stops in progress (or for good)
	begun  atomic.Int64 // stops begun or ended, ever (see Explains)
}

// Seq is read when a call begins; Explains(seq) when it has failed.
func (s *Stops) Seq() int64 { return s.begun.Load() }

// Explains reports whether a stop was in progress, or began or ended,
// since the call that read seq began. A stop's end counts too: a call that
// began during a stop may have read the stopped server's address just
// before the switch and dial it after the stop is over (connection
// refused), when no stop is in progress any more.
func (s *Stops) Explains(seq int64) bool { return s.active.Load() > 0 || s.begun.Load() != seq }

// Active reports whether a stop is in progress.
func (s *Stops) Active() bool { return s.active.Load() > 0 }

// Handover runs a soak's servers: serve starts one (and points new calls
// at it) and returns how to stop it gracefully. Once the first serves,
// load starts the clients; the first serves for d/2, then a second takes
// over while the first stops under load; after another d/2 the second
// stops under load too, and Handover returns once it has stopped (calls
// keep failing from then on: the stop is for good).
func (s *Stops) Handover(sum *Summary, d time.Duration, serve func() (stop func()), load func()) {
	stopFirst := serve()
	load()
	time.Sleep(d / 2)
	s.active.Add(1) // calls already aimed at the first server may fail
	s.begun.Add(1)
	stopSecond := serve()
	sum.Faults.Add(1)
	stopFirst()
	s.active.Add(-1)
	s.begun.Add(1) // calls that began during the stop are still explained
	time.Sleep(d / 2)
	s.active.Add(1) // for good
	s.begun.Add(1)
	sum.Faults.Add(1)
	stopSecond()
}
