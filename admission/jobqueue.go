package admission

import (
	"fmt"
	"slices"
)

// jobQueue holds the queued jobs of one flow, or the jobs of one flow parked
// on one resource, in the flow's order (jobOrderKey, least first). It takes
// no locks.
//
// Almost every job sorts after all the others of its flow when it arrives:
// its aging clock starts at arrival and arrivals are numbered in order. Such
// a job goes to the back of a ring, which therefore stays sorted, and the
// ring's front is its best job: pushing and popping are O(1) and touch no
// other job record. A job that would not sort last — a retry, whose aging
// clock runs from its first submission; a job returning from a resource it
// was parked on; a ShortestFirst job that overtakes — goes to a heap beside
// the ring instead, and the queue's best job is the better of the ring's
// front and the heap's top. Every slot keeps the job's order key next to
// the job, so finding and ranking the best job reads no job record: with
// 100,000 queued jobs those reads, and the index writes of a heap's sifts,
// were cache misses on every admission.
//
// A job that leaves from inside the ring (cancelled, timed out, pushed out)
// leaves a hole: its slot's job is nil. Holes at either end are trimmed at
// once, so the front and back slots always hold jobs; holes inside are
// squeezed out when the ring is full and at least half holes, otherwise the
// ring doubles. Both cost O(1) amortized per push.
//
// Invariants: len(ring) is 0 or a power of two; the slots in use are the
// positions [front, back), slot p at ring[p & (len(ring)-1)], at most
// len(ring) of them; if any is in use, the first and the last hold a job;
// the keys of the slots in use (holes included) never decrease; inRing
// counts the slots holding a job. A job in the ring has inRing set, idx ==
// its position and the slot's key == jobOrderKey(job); a job in the heap
// has inRing clear and idx == its heap position. A job in neither has idx -1.
type jobQueue struct {
	ring        []jobSlot
	front, back uint64
	inRing      int
	heap        keyedHeap[jobKey, *job]
}

type jobSlot struct {
	k jobKey
	j *job // nil: a hole
}

// minRing is the ring's length when its first job arrives.
const minRing = 4

// maxKeptRing is the longest ring a queue keeps when it is reset for reuse.
const maxKeptRing = 64

func newJobQueue() jobQueue {
	return jobQueue{heap: keyedHeap[jobKey, *job]{key: jobOrderKey, less: lessJobKey, index: jobIndex}}
}

func (q *jobQueue) Len() int { return q.inRing + q.heap.Len() }

func (q *jobQueue) slot(p uint64) *jobSlot { return &q.ring[p&uint64(len(q.ring)-1)] }

// top returns the best job's order key and the job; q must not be empty.
// The key is valid until q changes.
func (q *jobQueue) top() (*jobKey, *job) {
	if q.inRing > 0 {
		s := q.slot(q.front)
		if q.heap.Len() == 0 || !lessJobKey(q.heap.topKey(), &s.k) {
			return &s.k, s.j
		}
	}
	return q.heap.topKey(), q.heap.Top()
}

// topKey returns the best job's order key; q must not be empty. It is
// valid until q changes.
func (q *jobQueue) topKey() *jobKey {
	k, _ := q.top()
	return k
}

// Top returns the best job; q must not be empty.
func (q *jobQueue) Top() *job {
	_, j := q.top()
	return j
}

// Push adds j, whose order key is set.
func (q *jobQueue) Push(j *job) {
	k := jobOrderKey(j)
	if q.inRing > 0 && lessJobKey(&k, &q.slot(q.back-1).k) {
		j.inRing = false
		q.heap.Push(j)
		return
	}
	if q.back-q.front == uint64(len(q.ring)) {
		q.makeRoom()
	}
	*q.slot(q.back) = jobSlot{k, j}
	j.idx, j.inRing = int(q.back), true
	q.back++
	q.inRing++
}

// Remove takes j, which is in q, out of it.
func (q *jobQueue) Remove(j *job) {
	if !j.inRing {
		q.heap.Remove(j.idx)
		return
	}
	q.slot(uint64(j.idx)).j = nil
	j.idx, j.inRing = -1, false
	q.inRing--
	for q.front != q.back && q.slot(q.front).j == nil {
		q.front++
	}
	for q.back != q.front && q.slot(q.back-1).j == nil {
		q.back--
	}
}

// Pop removes and returns the best job; q must not be empty.
func (q *jobQueue) Pop() *job {
	j := q.Top()
	q.Remove(j)
	return j
}

// makeRoom is called when every slot of the ring is in use: it squeezes the
// holes out if they are at least half of it, and otherwise doubles it.
// Doubling keeps every job's position (it only spreads the positions over
// more slots), so it touches no job record.
func (q *jobQueue) makeRoom() {
	n := uint64(len(q.ring))
	if n > 0 && uint64(q.inRing) <= n/2 {
		w := q.front
		for p := q.front; p != q.back; p++ {
			if s := *q.slot(p); s.j != nil {
				*q.slot(w) = s
				s.j.idx = int(w)
				w++
			}
		}
		q.back = w
		return
	}
	ring := make([]jobSlot, max(2*n, minRing))
	mask := uint64(len(ring) - 1)
	for p := q.front; p != q.back; p++ {
		ring[p&mask] = *q.slot(p)
	}
	q.ring = ring
}

// each calls fn for every job in q, in no particular order.
func (q *jobQueue) each(fn func(*job)) {
	for p := q.front; p != q.back; p++ {
		if j := q.slot(p).j; j != nil {
			fn(j)
		}
	}
	for _, s := range q.heap.s {
		fn(s.v)
	}
}

// Reinit recomputes every job's order key, after changes to many of them at
// once, and restores the order in O(n log n): all jobs go into the ring,
// sorted.
func (q *jobQueue) Reinit() {
	var js []*job
	q.each(func(j *job) { js = append(js, j) })
	slots := make([]jobSlot, len(js))
	for i, j := range js {
		slots[i] = jobSlot{jobOrderKey(j), j}
	}
	slices.SortFunc(slots, func(a, b jobSlot) int {
		switch {
		case lessJobKey(&a.k, &b.k):
			return -1
		case lessJobKey(&b.k, &a.k):
			return 1
		}
		return 0
	})
	q.reset()
	for _, s := range slots {
		s.j.idx = -1
		q.Push(s.j)
	}
}

// reset empties q for reuse, keeping a ring of moderate length. The jobs it
// held are not touched.
func (q *jobQueue) reset() {
	if len(q.ring) > maxKeptRing {
		q.ring = nil
	}
	clear(q.ring)
	q.front, q.back, q.inRing = 0, 0, 0
	clear(q.heap.s)
	q.heap.s = q.heap.s[:0]
}

// verify reports the first broken invariant of q, or nil.
func (q *jobQueue) verify() error {
	n := uint64(len(q.ring))
	switch {
	case n&(n-1) != 0:
		return fmt.Errorf("job queue: ring length %d is not a power of two", n)
	case q.back-q.front > n:
		return fmt.Errorf("job queue: %d slots in use in a ring of %d", q.back-q.front, n)
	case q.front != q.back && (q.slot(q.front).j == nil || q.slot(q.back-1).j == nil):
		return fmt.Errorf("job queue: a hole at the front or back of [%d, %d)", q.front, q.back)
	}
	live := 0
	for p := q.front; p != q.back; p++ {
		s := q.slot(p)
		if p != q.front && lessJobKey(&s.k, &q.slot(p-1).k) {
			return fmt.Errorf("job queue: ring position %d sorts before the one ahead of it", p)
		}
		if s.j == nil {
			continue
		}
		live++
		if !s.j.inRing || s.j.idx != int(p) || s.k != jobOrderKey(s.j) {
			return fmt.Errorf("job queue: job %d at ring position %d has idx %d, inRing %v, key %+v (slot %+v)",
				s.j.seq, p, s.j.idx, s.j.inRing, jobOrderKey(s.j), s.k)
		}
	}
	if live != q.inRing {
		return fmt.Errorf("job queue: %d jobs in the ring, inRing %d", live, q.inRing)
	}
	if i := q.heap.verify(); i >= 0 {
		return fmt.Errorf("job queue: heap broken at %d", i)
	}
	for _, s := range q.heap.s {
		if s.v.inRing {
			return fmt.Errorf("job queue: job %d in the heap has inRing set", s.v.seq)
		}
	}
	return nil
}
