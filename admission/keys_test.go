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
// it keeps stay within the bound its comment promises.
func TestKeyTableRandom(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 13))
		kt := newKeyTable()
		var idle []*keyState // model: idle tracked keys, oldest first
		var all []*keyState
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
			if max := 2*kt.nIdle + 9; len(kt.idle)-kt.head > max {
				t.Fatalf("seed %d step %d: %d entries kept for %d idle keys (bound %d)", seed, step, len(kt.idle)-kt.head, kt.nIdle, max)
			}
		}
	}
}
