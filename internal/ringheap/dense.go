package ringheap

import (
	"fmt"
	"iter"
)

// Dense is a priority queue (least first) with the ring and heap of a
// [Queue], laid out for many elements whose records are not in the cache.
// It differs from a Queue in two ways:
//
//   - Each element in it holds a handle, a small int that Dense gives it
//     at Push and takes back at Remove; the element stores its handle (at
//     Index(x)), not its position. Elements with their keys, and
//     positions, live in two arrays of the Dense, by handle, so moving an
//     element in the heap writes the Dense's own memory and never the
//     element's record.
//   - A slot, of the ring or the heap, is 16 bytes: the handle and an
//     abbreviated key, Prefix(k), a uint64 that orders as the keys do but
//     may tie where they do not: Less(a, b) must imply Prefix(a) <=
//     Prefix(b). Comparisons read the prefixes; only slots whose prefixes
//     are equal compare the full keys, kept by handle. The four children
//     of a node take 64 bytes, one or two cache lines.
//
// So a sift through a heap of n elements reads one or two lines of slots
// a level, for log4(n) levels, and writes as many entries of the position
// array, where a Queue reads three or four lines a level and writes into
// every moved element. The price is memory, 24 bytes by handle beside the
// element and its key, and the abbreviation to write.
//
// The zero value is an empty Dense, ready to use. A Dense is not safe for
// concurrent use.
//
// Invariants: as for a Queue, with slots in place of entries, except that
// a hole is a zero slot and the order holds between the slots that hold an
// element (holes keep no key). A handle h is in use iff recs[h].x is not
// the zero T; then *Index(recs[h].x) == h, recs[h].k == Key(recs[h].x),
// and the slot at pos[h] (a heap position >= 0 or ringIndex(p)) holds h
// and Prefix(recs[h].k). Handle 0 is never used (recs is empty or recs[0]
// is zero), so that a zero slot is a hole; free lists the unused handles.
type Dense[K comparable, T comparable, O DenseOrder[K, T]] struct {
	ring ring[slot]
	heap []slot

	recs []rec[K, T] // by handle: the element and its key; the zero rec when free
	pos  []int       // by handle: heap position (>= 0) or ringIndex (<= -2)
	free []int32     // handles not in use
}

// A DenseOrder is the Order of a Dense, with the abbreviation of its keys:
// Less(a, b) must imply Prefix(a) <= Prefix(b). Index(x) is where x
// stores its handle.
type DenseOrder[K comparable, T comparable] interface {
	Order[K, T]
	Prefix(k K) uint64
}

// rec is what a Dense keeps of an element, by its handle.
type rec[K comparable, T comparable] struct {
	k K
	x T
}

// slot is what Dense's ring and heap hold: an element's handle and its
// key's prefix.
type slot struct {
	p uint64
	h int32
}

// hole reports whether s is a hole of the ring: handle 0 is never used.
func (s slot) hole() bool { return s.h == 0 }

// ord is the ordering: O has no size, so this costs nothing.
func (q *Dense[K, T, O]) ord() O {
	var o O
	return o
}

// Len is the number of elements in q.
func (q *Dense[K, T, O]) Len() int { return int(q.ring.n) + q.heapLen() }

func (q *Dense[K, T, O]) heapLen() int { return len(q.heap) }

// at is the slot of heap position i.
func (q *Dense[K, T, O]) at(i int) *slot { return &q.heap[i] }

// lessSlot orders two slots: by prefix, and by the full keys when the
// prefixes tie.
func (q *Dense[K, T, O]) lessSlot(a, b *slot) bool {
	if a.p != b.p {
		return a.p < b.p
	}
	return q.ord().Less(q.recs[a.h].k, q.recs[b.h].k)
}

// Peek returns the least element and its key; q must not be empty. The key
// is valid until q changes.
func (q *Dense[K, T, O]) Peek() (*K, T) {
	s := q.top()
	r := &q.recs[s.h]
	return &r.k, r.x
}

func (q *Dense[K, T, O]) top() *slot {
	if q.ring.n > 0 {
		s := q.ring.first()
		if q.heapLen() == 0 || !q.lessSlot(q.at(0), s) {
			return s
		}
	}
	return q.at(0)
}

// Top returns the least element; q must not be empty.
func (q *Dense[K, T, O]) Top() T { return q.recs[q.top().h].x }

// TopKey returns the least element's key; q must not be empty. It is valid
// until q changes.
func (q *Dense[K, T, O]) TopKey() *K { return &q.recs[q.top().h].k }

// Push adds x, which is not in q.
func (q *Dense[K, T, O]) Push(x T) {
	var h int32
	switch n := len(q.free); {
	case n > 0:
		h = q.free[n-1]
		q.free = q.free[:n-1]
	case len(q.recs) == 0: // handle 0 is never used: a zero slot is a hole
		q.recs, q.pos = make([]rec[K, T], 2, minRing), make([]int, 2, minRing)
		h = 1
	default:
		h = int32(len(q.recs))
		q.recs, q.pos = append(q.recs, rec[K, T]{}), append(q.pos, -1)
	}
	o := q.ord()
	k := o.Key(x)
	q.recs[h] = rec[K, T]{k, x}
	*o.Index(x) = int(h)
	q.place(slot{o.Prefix(k), h})
}

// place puts s, whose handle's key is set, in the ring when it sorts no
// earlier than the ring's last slot, and otherwise in the heap.
func (q *Dense[K, T, O]) place(s slot) {
	if q.ring.n > 0 && q.lessSlot(&s, q.ring.last()) {
		q.heap = append(q.heap, s)
		q.up(q.heapLen()-1, s)
		return
	}
	q.pos[s.h] = ringIndex(q.ring.push(s, q.moved))
}

// moved records that s is now at ring position p.
func (q *Dense[K, T, O]) moved(s slot, p uint32) { q.pos[s.h] = ringIndex(p) }

// Remove takes x, which is in q, out of it.
func (q *Dense[K, T, O]) Remove(x T) {
	h := int32(*q.ord().Index(x))
	q.unplace(h)
	q.recs[h], q.pos[h] = rec[K, T]{}, -1
	q.free = append(q.free, h)
	*q.ord().Index(x) = -1
}

// unplace takes handle h's slot out of the ring or the heap.
func (q *Dense[K, T, O]) unplace(h int32) {
	i := q.pos[h]
	if i >= 0 {
		n := q.heapLen() - 1
		last := *q.at(n)
		q.heap[n] = slot{}
		q.heap = q.heap[:n]
		if i != n {
			q.up(q.hole(i), last)
		}
		return
	}
	q.ring.drop(ringPos(i), slot{})
}

// Pop removes and returns the least element; q must not be empty.
func (q *Dense[K, T, O]) Pop() T {
	x := q.Top()
	q.Remove(x)
	return x
}

// Fix restores the order after x's key changed; x is in q.
func (q *Dense[K, T, O]) Fix(x T) {
	o := q.ord()
	h := int32(*o.Index(x))
	k := o.Key(x)
	if k == q.recs[h].k {
		return
	}
	q.recs[h].k = k
	s := slot{o.Prefix(k), h}
	i := q.pos[h]
	if i >= 0 {
		*q.at(i) = s
		if !q.down(i) {
			q.up(i, s)
		}
		return
	}
	// In the ring it stays where it is if it still sorts between its
	// neighbours. A hole keeps no key (unlike a Queue's), so next to a
	// hole it moves.
	p := ringPos(i)
	if q.between(p, &s) {
		*q.ring.at(p) = s
		return
	}
	q.unplace(h)
	q.place(s)
}

// between reports whether s sorts between the elements at ring positions
// p-1 and p+1 (where there are any), both holding one.
func (q *Dense[K, T, O]) between(p uint32, s *slot) bool {
	if p != q.ring.front {
		if prev := q.ring.at(p - 1); prev.hole() || q.lessSlot(s, prev) {
			return false
		}
	}
	if p+1 != q.ring.back {
		if next := q.ring.at(p + 1); next.hole() || q.lessSlot(next, s) {
			return false
		}
	}
	return true
}

// The heap's sifts, as Heap's (move into a hole, remove bottom-up), on
// slots; each move writes the moved handle's position.

func (q *Dense[K, T, O]) set(i int, s slot) {
	*q.at(i) = s
	q.pos[s.h] = i
}

func (q *Dense[K, T, O]) up(j int, s slot) {
	for j > 0 {
		i := (j - 1) / arity
		if !q.lessSlot(&s, q.at(i)) {
			break
		}
		q.set(j, *q.at(i))
		j = i
	}
	q.set(j, s)
}

func (q *Dense[K, T, O]) leastChild(i int) int {
	c, n := arity*i+1, q.heapLen()
	if c >= n || c < 0 {
		return -1
	}
	best := c
	for d := c + 1; d < c+arity && d < n; d++ {
		if q.lessSlot(q.at(d), q.at(best)) {
			best = d
		}
	}
	return best
}

func (q *Dense[K, T, O]) down(i0 int) bool {
	c := q.leastChild(i0)
	if c < 0 || !q.lessSlot(q.at(c), q.at(i0)) {
		return false
	}
	s, i := *q.at(i0), i0
	for {
		q.set(i, *q.at(c))
		i = c
		c = q.leastChild(i)
		if c < 0 || !q.lessSlot(q.at(c), &s) {
			break
		}
	}
	q.set(i, s)
	return true
}

func (q *Dense[K, T, O]) hole(i int) int {
	for {
		c := q.leastChild(i)
		if c < 0 {
			return i
		}
		q.set(i, *q.at(c))
		i = c
	}
}

// All yields every element of q, in no particular order. q must not change
// during the iteration.
func (q *Dense[K, T, O]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		for p := q.ring.front; p != q.ring.back; p++ {
			if s := q.ring.at(p); !s.hole() && !yield(q.recs[s.h].x) {
				return
			}
		}
		for i := range q.heapLen() {
			if !yield(q.recs[q.at(i).h].x) {
				return
			}
		}
	}
}

// Verify reports the first broken invariant of q, or nil.
func (q *Dense[K, T, O]) Verify() error {
	var zt T
	o := q.ord()
	if err := q.ring.verify(); err != nil {
		return fmt.Errorf("dense: %v", err)
	}
	if len(q.pos) != len(q.recs) || len(q.recs) > 0 && q.recs[0] != (rec[K, T]{}) {
		return fmt.Errorf("dense: %d records, %d positions, handle 0 in use: %v", len(q.recs), len(q.pos), len(q.recs) > 0 && q.recs[0] != (rec[K, T]{}))
	}
	// checkSlot checks the slot at position at (a heap position or a
	// ringIndex) against its handle's records.
	checkSlot := func(s slot, at int) error {
		h := s.h
		switch {
		case h <= 0 || int(h) >= len(q.recs) || q.recs[h].x == zt:
			return fmt.Errorf("dense: slot at %d holds handle %d, not in use", at, h)
		case q.pos[h] != at:
			return fmt.Errorf("dense: handle %d is at %d, its position says %d", h, at, q.pos[h])
		case *o.Index(q.recs[h].x) != int(h):
			return fmt.Errorf("dense: handle %d's element stores %d", h, *o.Index(q.recs[h].x))
		case q.recs[h].k != o.Key(q.recs[h].x):
			return fmt.Errorf("dense: handle %d has a stale key %+v (now %+v)", h, q.recs[h].k, o.Key(q.recs[h].x))
		case s.p != o.Prefix(q.recs[h].k):
			return fmt.Errorf("dense: handle %d has a stale prefix %#x (now %#x)", h, s.p, o.Prefix(q.recs[h].k))
		}
		return nil
	}
	// ordered checks that a (ahead) does not sort after b, at position at
	// of the ring or the heap (where), and that the prefixes agree with
	// the keys.
	ordered := func(a, b *slot, where string, at uint32) error {
		if q.lessSlot(b, a) {
			return fmt.Errorf("dense: %s position %d sorts before the slot ahead of it", where, at)
		}
		if ka, kb := q.recs[a.h].k, q.recs[b.h].k; o.Less(ka, kb) && a.p > b.p || o.Less(kb, ka) && b.p > a.p {
			return fmt.Errorf("dense: %s position %d: the prefixes %#x and %#x disagree with the keys", where, at, a.p, b.p)
		}
		return nil
	}
	var prev *slot
	for p := q.ring.front; p != q.ring.back; p++ {
		s := q.ring.at(p)
		if s.hole() {
			continue
		}
		if err := checkSlot(*s, ringIndex(p)); err != nil {
			return err
		}
		if prev != nil {
			if err := ordered(prev, s, "ring", p); err != nil {
				return err
			}
		}
		prev = s
	}
	for i := range q.heapLen() {
		if err := checkSlot(*q.at(i), i); err != nil {
			return err
		}
		if i > 0 {
			if err := ordered(q.at((i-1)/arity), q.at(i), "heap", uint32(i)); err != nil {
				return err
			}
		}
	}
	if used := max(len(q.recs)-1, 0) - len(q.free); used != q.Len() {
		return fmt.Errorf("dense: %d handles in use, %d elements", used, q.Len())
	}
	for _, h := range q.free {
		if h <= 0 || int(h) >= len(q.recs) || q.recs[h].x != zt {
			return fmt.Errorf("dense: free handle %d is in use", h)
		}
	}
	return nil
}
