package ringheap

import "fmt"

// ring is the sorted ring in front of a Queue's or a Dense's heap (see
// Queue): the slots in use are positions [front, back), slot p at
// s[p & (len(s)-1)]. A slot whose element left is a hole until it reaches
// an end, where it is trimmed at once, or the ring is squeezed. The ring
// knows slots, not order: its owner decides what goes to the back.
//
// Positions are 32-bit and wrap around: only differences and equality of
// positions are used, and every position in use lies within len(s) of
// front, so a position names one slot even after 2^32 pushes.
//
// Invariants: len(s) is 0 or a power of two, at most 2^31; back-front <=
// len(s); if any slot is in use, the first and the last hold an element;
// n counts the slots holding one.
type ring[E ringSlot] struct {
	s           []E
	front, back uint32
	n           int32
}

// ringSlot is what a ring holds (a Queue's entry, a Dense's slot).
type ringSlot interface {
	comparable
	hole() bool // the element left; a zero slot is a hole
}

// minRing is the ring's length when its first element arrives.
const minRing = 4

// ringIndex encodes ring position p as an index (<= -2); ringPos decodes it.
func ringIndex(p uint32) int { return -2 - int(p) }
func ringPos(i int) uint32   { return uint32(-2 - i) }

func (r *ring[E]) at(p uint32) *E { return &r.s[p&uint32(len(r.s)-1)] }

// first and last are the slots at the ends; r must hold an element.
func (r *ring[E]) first() *E { return r.at(r.front) }
func (r *ring[E]) last() *E  { return r.at(r.back - 1) }

// push puts e at the back and returns its position. moved is told the new
// position of each element that making room moves (rarely: see makeRoom).
func (r *ring[E]) push(e E, moved func(E, uint32)) uint32 {
	if r.back-r.front == uint32(len(r.s)) {
		r.makeRoom(moved)
	}
	p := r.back
	*r.at(p) = e
	r.back++
	r.n++
	return p
}

// drop leaves hole at position p, whose element left. Only an end can have
// become a hole: the slots at the other end are not read (with a long
// queue, each is a cache miss).
func (r *ring[E]) drop(p uint32, hole E) {
	*r.at(p) = hole
	r.n--
	if p == r.front {
		for r.front++; r.front != r.back && (*r.at(r.front)).hole(); {
			r.front++
		}
	} else if p+1 == r.back {
		for r.back--; r.back != r.front && (*r.at(r.back - 1)).hole(); {
			r.back--
		}
	}
}

// makeRoom is called when every slot is in use: it squeezes the holes out
// if they are at least half of them, telling moved of each element's new
// position, and otherwise doubles the ring, which keeps every position.
// Both cost O(1) amortized per push.
func (r *ring[E]) makeRoom(moved func(E, uint32)) {
	n := uint32(len(r.s))
	if n > 0 && uint32(r.n) <= n/2 {
		w := r.front
		for p := r.front; p != r.back; p++ {
			if e := *r.at(p); !e.hole() {
				*r.at(w) = e
				moved(e, w)
				w++
			}
		}
		var zero E
		for p := w; p != r.back; p++ {
			*r.at(p) = zero
		}
		r.back = w
		return
	}
	s := make([]E, max(2*n, minRing))
	mask := uint32(len(s) - 1)
	for p := r.front; p != r.back; p++ {
		s[p&mask] = *r.at(p)
	}
	r.s = s
}

// reset empties r, keeping its array if it is at most keep slots long.
func (r *ring[E]) reset(keep int) {
	if len(r.s) > keep {
		r.s = nil
	}
	clear(r.s)
	r.front, r.back, r.n = 0, 0, 0
}

// verify checks the invariants written on ring.
func (r *ring[E]) verify() error {
	n := uint32(len(r.s))
	switch {
	case n&(n-1) != 0 || len(r.s) > 1<<31:
		return fmt.Errorf("ring length %d is not a power of two", n)
	case r.back-r.front > n:
		return fmt.Errorf("%d slots in use in a ring of %d", r.back-r.front, n)
	case r.front != r.back && ((*r.first()).hole() || (*r.last()).hole()):
		return fmt.Errorf("a hole at the front or back of [%d, %d)", r.front, r.back)
	}
	live := int32(0)
	for p := r.front; p != r.back; p++ {
		if !(*r.at(p)).hole() {
			live++
		}
	}
	if live != r.n {
		return fmt.Errorf("%d elements in the ring, %d counted", live, r.n)
	}
	return nil
}
