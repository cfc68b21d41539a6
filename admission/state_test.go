package admission

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// Unit tests of the scheduler's own records. The generic structures they
// are kept in have their own tests (internal/ringheap, internal/lengths,
// internal/freelist); TestJobQueueRandom drives a jobQueue with the job
// order (jobOrderKey, lessJobKey) the scheduler gives it.

// TestJobQueueRandom drives a jobQueue with pushes (mostly in order, as
// arrivals are, some out of order, as retries and unparked jobs are),
// removals from anywhere, pops and re-keying, against a plain slice.
func TestJobQueueRandom(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var q jobQueue
		typ := &typeState{}
		var in []*job // what q holds
		var seq uint64
		clock := int64(1000)
		best := func() *job {
			var b *job
			for _, j := range in {
				if b == nil {
					b = j
					continue
				}
				if bk, jk := jobOrderKey(b), jobOrderKey(j); lessJobKey(jk, bk) {
					b = j
				}
			}
			return b
		}
		for step := range 2000 {
			switch op := rng.IntN(10); {
			case op < 5: // arrival: sorts last, or (1 in 5) carries an older clock
				seq++
				clock += int64(rng.IntN(3))
				at := clock
				if rng.IntN(5) == 0 {
					at -= int64(rng.IntN(50))
				}
				j := &job{typ: typ, seq: seq, agingAt: at, idx: -1}
				q.Push(j)
				in = append(in, j)
			case op < 7 && len(in) > 0: // leaves from anywhere
				i := rng.IntN(len(in))
				q.Remove(in[i])
				if in[i].idx != -1 {
					t.Fatalf("seed %d step %d: removed job keeps idx %d", seed, step, in[i].idx)
				}
				in = slices.Delete(in, i, i+1)
			case op < 9 && len(in) > 0: // admitted: the best goes
				want := best()
				if got := q.Top(); got != want {
					t.Fatalf("seed %d step %d: Top is job %d, want %d", seed, step, got.seq, want.seq)
				}
				if k := jobOrderKey(want); *q.TopKey() != k {
					t.Fatalf("seed %d step %d: top key %+v, want %+v", seed, step, *q.TopKey(), k)
				}
				q.Pop()
				in = slices.DeleteFunc(in, func(j *job) bool { return j == want })
			case op == 9 && len(in) > 0: // a pause moved some clocks
				for _, j := range in {
					if rng.IntN(3) == 0 {
						j.agingAt += int64(rng.IntN(20))
					}
				}
				q.Reinit()
			}
			if err := q.Verify(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			if q.Len() != len(in) {
				t.Fatalf("seed %d step %d: Len %d, holds %d", seed, step, q.Len(), len(in))
			}
			if len(in) > 0 && q.Top() != best() {
				t.Fatalf("seed %d step %d: Top is job %d, want %d", seed, step, q.Top().seq, best().seq)
			}
		}
		for len(in) > 0 { // drain in order
			want := best()
			if got := q.Pop(); got != want {
				t.Fatalf("seed %d drain: Pop gave job %d, want %d", seed, got.seq, want.seq)
			}
			in = slices.DeleteFunc(in, func(j *job) bool { return j == want })
		}
		// (Verify also finds slots left in use: a drained ring would have a
		// hole at its front.)
		if err := q.Verify(); err != nil || q.Len() != 0 {
			t.Fatalf("seed %d: drained queue: %v, Len %d", seed, err, q.Len())
		}
	}
}

// TestRecordSizes keeps a key's state and a flow within the two cache
// lines their comments promise: at most 128 bytes, the allocator's
// line-aligned class.
func TestRecordSizes(t *testing.T) {
	if n := unsafe.Sizeof(keyState{}); n > 128 {
		t.Errorf("keyState is %d bytes, want at most 128", n)
	}
	if n := unsafe.Sizeof(flow{}); n > 128 {
		t.Errorf("flow is %d bytes, want at most 128", n)
	}
}
