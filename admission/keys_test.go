package admission

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestKeyTableRandom drives a keyTable directly with random activations,
// idlings and forgettings of many keys, against a plain list of the idle
// keys in the order they went idle, checking its invariants after every
// step, that oldestIdle is the model's first idle key, and that the entries
// it keeps (the dropped front included) stay within the bound its comment
// promises.
func TestKeyTableRandom(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 13))
		kt := newKeyTable()
		var idle []*keyState // model: idle tracked keys, oldest first
		var all []*keyState
		peak := 0 // most idle keys so far
		for step := range 5000 {
			switch op := rng.IntN(10); {
			case op < 2 || len(all) == 0: // a new key, active
				k := &keyState{name: "k" + strconv.Itoa(len(all)), active: true}
				kt.add(k)
				all = append(all, k)
			case op < 6: // a key changes state
				k := all[rng.IntN(len(all))]
				switch {
				case kt.get(k.name) != k: // forgotten: stays out
				case k.active:
					k.active = false
					kt.idled(k)
					idle = append(idle, k)
				default:
					k.active = true
					kt.activated(k)
					idle = slices.DeleteFunc(idle, func(x *keyState) bool { return x == k })
				}
			case op < 7 && len(idle) > 0: // the oldest idle is forgotten
				if got := kt.oldestIdle(); got != idle[0] {
					t.Fatalf("seed %d step %d: oldestIdle %v, want %s", seed, step, got, idle[0].name)
				}
				kt.forgetOldest()
				idle = idle[1:]
			default:
				var want *keyState
				if len(idle) > 0 {
					want = idle[0]
				}
				if got := kt.oldestIdle(); got != want {
					t.Fatalf("seed %d step %d: oldestIdle %v, want %v", seed, step, got, want)
				}
			}
			if err := kt.verify(len(all)); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			if kt.nIdle != len(idle) {
				t.Fatalf("seed %d step %d: %d idle, model %d", seed, step, kt.nIdle, len(idle))
			}
			peak = max(peak, kt.nIdle)
			if bound := 2*peak + 9; len(kt.idle) > bound {
				t.Fatalf("seed %d step %d: %d entries kept (%d dropped at the front), at most %d idle keys so far (bound %d)",
					seed, step, len(kt.idle), kt.head, peak, bound)
			}
		}
	}
}

// TestKeyTableChurn: keys that come once, go idle and are forgotten oldest
// first (a bounded table under a stream of new callers, as MaxKeys does)
// must not grow the idle list's array with every key ever seen: it stays
// within a small multiple of the idle keys kept. (The soak found this: the
// dropped front was not counted, and the array grew by a pointer a key.)
func TestKeyTableChurn(t *testing.T) {
	const kept, churn = 100, 100_000
	kt := newKeyTable()
	for i := range churn {
		k := &keyState{name: "k" + strconv.Itoa(i), active: true}
		kt.add(k)
		k.active = false
		kt.idled(k)
		if kt.nIdle > kept {
			kt.oldestIdle()
			kt.forgetOldest()
		}
		if bound := 4*kept + 64; cap(kt.idle) > bound {
			t.Fatalf("after %d keys: the idle list's array holds %d entries (%d live, %d dropped at the front), bound %d",
				i+1, cap(kt.idle), kt.nIdle, kt.head, bound)
		}
	}
	if err := kt.verify(kept); err != nil {
		t.Fatal(err)
	}
}
