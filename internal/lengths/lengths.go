package lengths

import (
	"fmt"
	"iter"
	"math"
)

// Buckets tracks elements by count and finds one with the greatest count
// (see the package doc). T is the element, usually a pointer; its zero
// value is never an element.
//
// The zero value is an empty Buckets, ready to use. It is not safe for
// concurrent use.
//
// Invariants: every element with count c > 0 has a handle with count c
// holding slot s (owners[s] == the element) and exactly one live entry
// (stamp == stamps[s]), in bucket c; an element with count 0 has the zero
// handle; free lists the slots nobody holds, whose stamps are 0 and owners
// zero; buckets[c].n is the number of live entries in bucket c; max is the
// largest c with buckets[c].n > 0, or 0. Dead entries are dropped when
// they reach the end of the greatest bucket, and a bucket is compacted
// when it holds more than twice its live entries (plus a few), so the
// memory is O(elements with a count + buckets) and each entry is dropped
// once: O(1) amortized per change.
type Buckets[T comparable] struct {
	buckets []bucket // by count; buckets[0] is unused
	max     int
	stamp   uint64 // the last stamp handed out

	stamps []uint64 // by slot: the stamp of the holder's live entry; 0 = free
	owners []T      // by slot: the holder, or the zero T
	free   []int32  // slots nobody holds
}

// A Handle is what an element keeps of its place in a [Buckets]: the count
// last recorded and its slot. The zero value is the handle of an element
// with count 0, which is in no bucket. The caller stores it in the
// element's record and never changes it; it is read and written only by
// the Buckets' methods, under the same lock.
//
// Both are 32-bit so that the handle takes 8 bytes: no element counts 2^31
// (each counted thing, a queued job, is a record of a few hundred bytes).
type Handle struct {
	count int32 // the count last recorded
	slot  int32 // 1 + the slot held while count > 0; 0 = none
}

// Count is the count last recorded for the element.
func (h Handle) Count() int { return int(h.count) }

type bucket struct {
	n       int // live entries: elements whose count is the bucket's
	entries []entry
}

type entry struct {
	stamp uint64
	slot  int32
}

func (b *Buckets[T]) live(e entry) bool { return b.stamps[e.slot] == e.stamp }

// Set records that x, whose handle is h, now has count n (n >= 0). It is
// called after every change of x's count; a call that changes nothing
// does nothing. n must be below 2^31; Set panics otherwise (a caller bug:
// see Handle).
func (b *Buckets[T]) Set(h *Handle, x T, n int) {
	if n < 0 || n > math.MaxInt32 {
		panic(fmt.Sprintf("lengths: count %d out of range", n))
	}
	old, cur := int(h.count), n
	if old == cur {
		return
	}
	if old > 0 {
		b.buckets[old].n--
	}
	h.count = int32(cur)
	if cur == 0 {
		b.release(h)
	} else {
		if old == 0 {
			b.hold(h, x)
		}
		for len(b.buckets) <= cur {
			b.buckets = append(b.buckets, bucket{})
		}
		bk := &b.buckets[cur]
		if len(bk.entries) >= 2*bk.n+8 {
			b.compact(bk)
		}
		bk.n++
		b.stamp++
		slot := h.slot - 1
		b.stamps[slot] = b.stamp
		bk.entries = append(bk.entries, entry{b.stamp, slot})
		b.max = max(b.max, cur)
	}
	for b.max > 0 && b.buckets[b.max].n == 0 {
		b.max--
	}
}

// hold gives x, which has just got a count, a slot.
func (b *Buckets[T]) hold(h *Handle, x T) {
	var slot int32
	if n := len(b.free); n > 0 {
		slot = b.free[n-1]
		b.free = b.free[:n-1]
	} else {
		slot = int32(len(b.stamps))
		b.stamps = append(b.stamps, 0)
		var zero T
		b.owners = append(b.owners, zero)
	}
	b.owners[slot] = x
	h.slot = slot + 1
}

// release frees the slot of the element whose handle is h, whose count is
// now 0: its entry is dead from now on.
func (b *Buckets[T]) release(h *Handle) {
	slot := h.slot - 1
	var zero T
	b.stamps[slot], b.owners[slot] = 0, zero
	b.free = append(b.free, slot)
	h.slot = 0
}

// compact drops bk's dead entries, keeping the order of the live ones.
func (b *Buckets[T]) compact(bk *bucket) {
	live := bk.entries[:0]
	for _, e := range bk.entries {
		if b.live(e) {
			live = append(live, e)
		}
	}
	bk.entries = live
}

// Longest returns the element with the greatest count that reached that
// count last, or the zero T when no element has a count above zero.
func (b *Buckets[T]) Longest() T {
	if b.max == 0 {
		var zero T
		return zero
	}
	bk := &b.buckets[b.max]
	for {
		last := len(bk.entries) - 1
		if e := bk.entries[last]; b.live(e) {
			return b.owners[e.slot]
		}
		bk.entries = bk.entries[:last]
	}
}

// All yields every element with a count above zero, greatest count first.
// b must not change during the iteration.
func (b *Buckets[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		for c := b.max; c > 0; c-- {
			for _, e := range b.buckets[c].entries {
				if b.live(e) && !yield(b.owners[e.slot]) {
					return
				}
			}
		}
	}
}

// Len is the number of elements with a count above zero.
func (b *Buckets[T]) Len() int { return len(b.stamps) - len(b.free) }

// VerifyHandle checks x's handle h from x's side: a count of 0 holds no
// slot, and a count above 0 holds a slot whose owner is x. With Verify,
// which checks every held slot's owner's handle, it ties every handle to
// the structure. It reports the first problem, or nil.
func (b *Buckets[T]) VerifyHandle(h *Handle, x T) error {
	switch s := int(h.slot) - 1; {
	case h.count < 0:
		return fmt.Errorf("lengths: element %v: negative count %d", x, h.count)
	case (h.count == 0) != (s < 0):
		return fmt.Errorf("lengths: element %v: count %d with slot %d", x, h.count, s)
	case s >= len(b.owners) || (s >= 0 && b.owners[s] != x):
		return fmt.Errorf("lengths: element %v: slot %d is not its own", x, s)
	}
	return nil
}

// Verify checks the invariants written on Buckets, reading each held
// element's handle with handle, and reports the first broken one, or nil.
func (b *Buckets[T]) Verify(handle func(T) *Handle) error {
	var zero T
	elems, top := 0, 0
	for c, bk := range b.buckets {
		live := 0
		for _, e := range bk.entries {
			if !b.live(e) {
				continue
			}
			live++
			x := b.owners[e.slot]
			if c == 0 || x == zero {
				return fmt.Errorf("lengths: slot %d (element %v) live in bucket %d", e.slot, x, c)
			}
			if h := handle(x); int(h.count) != c || h.slot-1 != e.slot {
				return fmt.Errorf("lengths: slot %d (element %v) live in bucket %d, its handle says count %d slot %d", e.slot, x, c, h.count, h.slot-1)
			}
		}
		if live != bk.n {
			return fmt.Errorf("lengths: bucket %d counts %d elements, holds %d live entries", c, bk.n, live)
		}
		if live > 0 {
			top = c
		}
		elems += live
	}
	if top != b.max || elems != b.Len() {
		return fmt.Errorf("lengths: max %d (want %d), elements %d (want %d)", b.max, top, b.Len(), elems)
	}
	held := 0
	for slot, x := range b.owners {
		switch {
		case x == zero && b.stamps[slot] != 0:
			return fmt.Errorf("lengths: free slot %d has stamp %d", slot, b.stamps[slot])
		case x == zero:
		case int(handle(x).slot-1) != slot || handle(x).count == 0:
			return fmt.Errorf("lengths: slot %d held by element %v (its handle: slot %d, count %d)", slot, x, handle(x).slot-1, handle(x).count)
		default:
			held++
		}
	}
	if held != elems || len(b.stamps) != len(b.owners) || held+len(b.free) != len(b.owners) {
		return fmt.Errorf("lengths: %d slots held, %d free, of %d (%d stamps); %d elements counted", held, len(b.free), len(b.owners), len(b.stamps), elems)
	}
	return nil
}
