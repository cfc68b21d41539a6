package lengths

import (
	"math/rand/v2"
	"testing"
)

// item is what the tests count: a name, its true count and its handle.
type item struct {
	name string
	n    int
	h    Handle
}

func itemHandle(x *item) *Handle { return &x.h }

// TestBucketsRandom drives Buckets with random ±1 changes of many items'
// counts and checks, after each, the invariants, that Longest is always an
// item of the greatest count, the one that reached it last, and that Len
// and All agree with the items; and that the entries kept stay within the
// bound the type's comment promises.
func TestBucketsRandom(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var b Buckets[*item]
		items := make([]*item, 50)
		reached := make([]int, len(items)) // step at which the item's count last changed
		for i := range items {
			items[i] = &item{name: string(rune('A' + i))}
		}
		for step := 1; step <= 5000; step++ {
			i := rng.IntN(len(items))
			x := items[i]
			if x.n > 0 && rng.IntN(2) == 0 {
				x.n--
			} else {
				x.n++
			}
			reached[i] = step
			b.Set(&x.h, x, x.n)
			if err := b.Verify(itemHandle); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			want, wi := (*item)(nil), -1
			counted := 0
			for i, x := range items {
				if err := b.VerifyHandle(&x.h, x); err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
				if x.h.Count() != x.n {
					t.Fatalf("seed %d step %d: item %s: handle counts %d, has %d", seed, step, x.name, x.h.Count(), x.n)
				}
				if x.n > 0 {
					counted++
				}
				if x.n > 0 && (want == nil || x.n > want.n || x.n == want.n && reached[i] > reached[wi]) {
					want, wi = x, i
				}
			}
			if got := b.Longest(); got != want {
				t.Fatalf("seed %d step %d: Longest is %v, want %v", seed, step, got, want)
			}
			if b.Len() != counted {
				t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, b.Len(), counted)
			}
			prev, all := int(^uint(0)>>1), 0
			for x := range b.All() {
				if x.n > prev || x.n == 0 {
					t.Fatalf("seed %d step %d: All yields %s (count %d) after a count of %d", seed, step, x.name, x.n, prev)
				}
				prev = x.n
				all++
			}
			if all != counted {
				t.Fatalf("seed %d step %d: All yields %d items, want %d", seed, step, all, counted)
			}
		}
		entries := 0
		for _, bk := range b.buckets {
			entries += len(bk.entries)
		}
		if max := 2*b.Len() + 8*len(b.buckets); entries > max {
			t.Fatalf("seed %d: %d entries kept for %d items in %d buckets (bound %d)", seed, entries, b.Len(), len(b.buckets), max)
		}
	}
}

// TestBucketsVerifyFails: Verify and VerifyHandle notice a handle that
// disagrees with the structure, so that the checks above can fail.
func TestBucketsVerifyFails(t *testing.T) {
	var b Buckets[*item]
	x, y := &item{name: "x"}, &item{name: "y"}
	b.Set(&x.h, x, 2)
	b.Set(&y.h, y, 1)
	if err := b.Verify(itemHandle); err != nil {
		t.Fatal(err)
	}
	x.h.count = 3 // changed behind the structure's back
	if b.Verify(itemHandle) == nil {
		t.Error("Verify missed a handle with the wrong count")
	}
	x.h.count, x.h.slot = 2, y.h.slot
	if b.Verify(itemHandle) == nil || b.VerifyHandle(&x.h, x) == nil {
		t.Error("Verify or VerifyHandle missed a handle with the wrong slot")
	}
	z := &item{name: "z", h: Handle{count: 0, slot: 1}} // a slot without a count
	if b.VerifyHandle(&z.h, z) == nil {
		t.Error("VerifyHandle missed a slot held at count 0")
	}
}

// TestSetOutOfRange: a count Handle cannot hold is a caller bug and
// panics rather than wrapping.
func TestSetOutOfRange(t *testing.T) {
	for _, n := range []int{-1, 1 << 31} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Set(%d) did not panic", n)
				}
			}()
			var b Buckets[*item]
			x := &item{}
			b.Set(&x.h, x, n)
		}()
	}
}
