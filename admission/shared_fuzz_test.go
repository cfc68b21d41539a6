package admission

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// This file drives the scheduler through random operations on shared and
// exclusive jobs, pauses and resumes, with no reference model: after every
// step it checks the structural invariants (checkInvariantsLocked, which
// also counts holders, exclusive holders and xwait per resource) and, from
// its own ledger, that shared and exclusive holders never mix on a resource
// and that nothing paused is admitted; at the end it lifts every pause and
// completes work until nothing is left, so a job parked with no one to wake
// it (a lost wake-up) fails the test.

var sharedTypes = map[JobType]JobTypeConfig{
	"fetch":  {Priority: 8, ConflictGroup: "git", Access: Shared},
	"clone":  {Priority: 8, ConflictGroup: "git"},
	"repack": {Priority: 4, ConflictGroup: "git", MaxConcurrency: 1},
	"gc":     {Priority: 4, ConflictGroup: "git", Access: Shared, Order: ShortestFirst},
}

var sharedTypeNames = []JobType{"fetch", "clone", "repack", "gc"}

type sharedDriver struct {
	t       testing.TB
	s       *Scheduler
	now     int64 // an instant (see Scheduler.now)
	ops     []string
	queued  map[*job]string // what each queued job is, for messages
	running []*job
	paused  map[string]bool // "type:x" and "key:y"
}

func runSharedFuzz(t testing.TB, data []byte) {
	var head [2]byte
	copy(head[:], data)
	if len(data) >= 2 {
		data = data[2:]
	}
	s, err := New(Config{
		Capacity: 2 + int(head[0]%5),
		MaxQueue: 4 + int(head[0]>>3%16),
		Keys:     map[string]KeyPolicy{"b": {MaxInFlight: 1 + int(head[1]%2)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sharedTypeNames {
		if err := s.RegisterType(name, sharedTypes[name]); err != nil {
			t.Fatal(err)
		}
	}
	d := &sharedDriver{t: t, s: s, now: time.Unix(1_000_000, 0).UnixNano(), queued: map[*job]string{}, paused: map[string]bool{}}
	for n := 0; len(data) >= 2 && n < maxFuzzOps; n++ {
		op, arg := data[0], data[1]
		data = data[2:]
		switch op % 7 {
		case 0, 1, 2:
			d.arrive(sharedTypeNames[arg%4], []string{"", "a", "b"}[arg>>2%3], fmt.Sprintf("r%d", arg>>4%2))
		case 3:
			if len(d.running) > 0 {
				d.complete(d.running[int(arg)%len(d.running)])
			}
		case 4:
			if len(d.queued) > 0 {
				d.cancel(arg)
			}
		case 5:
			d.pause("type:"+string(sharedTypeNames[arg%4]), arg&0x10 != 0)
		case 6:
			d.pause("key:"+[]string{"", "a", "b"}[arg%3], arg&0x10 != 0)
		}
		d.now += int64(time.Duration(arg%4) * time.Second)
	}
	for _, name := range sharedTypeNames {
		d.pause("type:"+string(name), false)
	}
	for _, k := range []string{"", "a", "b"} {
		d.pause("key:"+k, false)
	}
	for len(d.running) > 0 {
		d.complete(d.running[0])
	}
	if len(d.queued) > 0 {
		var left []string
		for _, what := range d.queued {
			left = append(left, what)
		}
		d.fatalf("nothing runs and %d jobs are still queued (lost wake-up): %v", len(d.queued), left)
	}
}

func (d *sharedDriver) fatalf(format string, args ...any) {
	d.t.Helper()
	fatalAfter(d.t, d.s, d.ops, format, args...)
}

// step runs one locked operation, dispatches and checks everything.
func (d *sharedDriver) step(desc string, op func(s *Scheduler, wake []*job) []*job) {
	d.t.Helper()
	d.ops = append(d.ops, desc)
	s := d.s
	s.mu.Lock()
	wake := op(s, nil)
	wake = s.dispatchLocked(d.now, wake)
	ierr := s.checkInvariantsLocked()
	s.mu.Unlock()
	if ierr != nil {
		d.fatalf("invariant broken: %v", ierr)
	}
	for _, j := range wake {
		what := d.queued[j]
		delete(d.queued, j)
		if j.err != nil {
			continue // pushed out
		}
		if d.paused["type:"+string(j.typ.name)] || d.paused["key:"+j.key.name] {
			d.fatalf("%s admitted while paused", what)
		}
		for _, r := range d.running {
			if r.typ.cfg.ConflictGroup == j.typ.cfg.ConflictGroup && r.jobID == j.jobID &&
				(r.typ.cfg.Access == Exclusive || j.typ.cfg.Access == Exclusive) {
				d.fatalf("%s admitted beside %s/%s on the same resource", what, r.typ.name, r.jobID)
			}
		}
		d.running = append(d.running, j)
	}
}

func (d *sharedDriver) arrive(typ JobType, key, id string) {
	j := &job{jobID: id, foreground: true}
	what := fmt.Sprintf("%s/%s key=%q", typ, id, key)
	d.step("arrive "+what, func(s *Scheduler, wake []*job) []*job {
		wake, err := s.enqueueLocked(j, s.types[typ], key, d.now, wake)
		if err == nil {
			d.queued[j] = what
		}
		return wake
	})
}

func (d *sharedDriver) complete(j *job) {
	for i, r := range d.running {
		if r == j {
			d.running = append(d.running[:i:i], d.running[i+1:]...)
		}
	}
	d.step(fmt.Sprintf("complete %s/%s", j.typ.name, j.jobID), func(s *Scheduler, wake []*job) []*job {
		s.finishLocked(j, d.now, time.Second, true)
		return wake
	})
}

func (d *sharedDriver) cancel(arg byte) {
	var jobs []*job
	for j := range d.queued {
		jobs = append(jobs, j)
	}
	// Map order is random: pick by sequence number for a reproducible run.
	var pick *job
	for _, j := range jobs {
		if pick == nil || j.seq < pick.seq {
			pick = j
		}
	}
	for _, j := range jobs {
		if j.seq%uint64(len(jobs)) == uint64(arg)%uint64(len(jobs)) {
			pick = j
			break
		}
	}
	what := d.queued[pick]
	delete(d.queued, pick)
	d.step("cancel "+what, func(s *Scheduler, wake []*job) []*job {
		s.unqueueLocked(pick, d.now)
		pick.err = context.Canceled
		return wake
	})
}

func (d *sharedDriver) pause(what string, on bool) {
	if d.paused[what] == on {
		return
	}
	d.paused[what] = on
	d.step(fmt.Sprintf("pause %s %v", what, on), func(s *Scheduler, wake []*job) []*job {
		name, isType := strings.CutPrefix(what, "type:")
		switch {
		case isType && on:
			s.pauseTypeLocked(s.types[JobType(name)], d.now)
		case isType:
			s.resumeTypeLocked(s.types[JobType(name)], d.now)
		case on:
			s.pauseKeyLocked(strings.TrimPrefix(what, "key:"), d.now)
		default:
			s.resumeKeyLocked(strings.TrimPrefix(what, "key:"), d.now)
		}
		return wake
	})
}

func FuzzSharedAccess(f *testing.F) {
	f.Add([]byte{})
	// Capacity 2: fetches share r0, a clone waits, a late fetch waits behind it.
	f.Add([]byte{0, 0, 0, 0x00, 0, 0x04, 0, 0x01, 0, 0x00, 3, 0, 3, 0, 3, 0})
	// A repack parks, its type is paused and resumed around releases.
	f.Add([]byte{1, 1, 0, 0x01, 0, 0x02, 5, 0x12, 3, 0, 5, 0x02, 0, 0x00, 6, 0x11, 3, 0, 6, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) { runSharedFuzz(t, data) })
}

func TestSharedRandomSequences(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range *modelSequences {
		b := make([]byte, 2+2*r.IntN(maxFuzzOps+1))
		for k := range b {
			b[k] = byte(r.Uint32())
		}
		if !t.Run(fmt.Sprint(i), func(t *testing.T) { runSharedFuzz(t, b) }) {
			t.Fatalf("input %q", b)
		}
	}
}
