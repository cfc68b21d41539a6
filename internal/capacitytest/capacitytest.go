// Package capacitytest is a backend of fixed capacity for the client
// adapters' throttling tests: it accepts the first n calls of each second
// of (fake) time and refuses the others, and counts what it sees; and
// Overload, the scenario both adapters' tests play against it. A
// backend that refuses a fixed share of whatever it is sent would not do:
// every refusal is evidence of overload, so throttling would drive such a
// backend's traffic towards nothing, not towards K times its accepts.
package capacitytest

import (
	"sync"
	"testing"
	"time"
)

// A Backend accepts PerSecond calls a second. The zero value accepts
// nothing; it is safe for concurrent use.
type Backend struct {
	mu        sync.Mutex
	perSecond int       // capacity per second
	second    time.Time // the second the budget is of
	left      int       // budget left in it
	seen      int       // calls seen since the last Take
	accepted  int       // calls accepted since the last Take
}

// New returns a backend that accepts perSecond calls a second.
func New(perSecond int) *Backend { return &Backend{perSecond: perSecond} }

// Admit counts a call at now and reports whether the backend accepts it.
func (b *Backend) Admit(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen++
	if s := now.Truncate(time.Second); !s.Equal(b.second) {
		b.second, b.left = s, b.perSecond
	}
	if b.left == 0 {
		return false
	}
	b.left--
	b.accepted++
	return true
}

// Take returns the calls seen and accepted since the last Take, and sets
// the capacity to perSecond from the next second on.
func (b *Backend) Take(perSecond int) (seen, accepted int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen, accepted = b.seen, b.accepted
	b.seen, b.accepted, b.perSecond = 0, 0, perSecond
	return seen, accepted
}

// Overload is the client adapters' throttling scenario, against a backend
// b of 5 calls a second, for a client throttling with a 10 s window and
// K = 2. call makes one call and reports whether the client refused it
// locally (it fails the test itself on anything unexpected); Overload
// makes 50 calls a second of (fake) time: 20 s to fill the window, 60 s
// of overload, in which the backend must see about K times what it
// accepts (all its capacity, 300 calls) and the client refuse the rest,
// then 20 s after the backend recovered, of which the second 10 s must
// pass at least 95% of the calls.
func Overload(t testing.TB, b *Backend, call func() (refused bool)) {
	t.Helper()
	calls := func(d time.Duration) (refused int) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if call() {
				refused++
			}
		}
		return refused
	}
	calls(20 * time.Second)
	b.Take(5)
	refused := calls(60 * time.Second)
	seen, accepted := b.Take(1000)
	if ratio := float64(seen) / float64(accepted); accepted < 280 || ratio < 1.8 || ratio > 2.2 {
		t.Errorf("overloaded for 60 s: the backend saw %d calls and accepted %d (%.2f times), want about 2 times with about 300 accepted", seen, accepted, ratio)
	}
	if seen+refused != 3000 {
		t.Errorf("%d calls seen and %d refused locally, want 3000 in all", seen, refused)
	}
	calls(10 * time.Second)
	if refused := calls(10 * time.Second); refused > 25 {
		t.Errorf("recovered: %d of the 500 calls of the second window were refused locally, want at most 5%%", refused)
	}
}
