// Package capacitytest is a backend of fixed capacity for the client
// adapters' throttling tests: it accepts the first n calls of each second
// of (fake) time and refuses the others, and counts what it sees. A
// backend that refuses a fixed share of whatever it is sent would not do:
// every refusal is evidence of overload, so throttling would drive such a
// backend's traffic towards nothing, not towards K times its accepts.
package capacitytest

import (
	"sync"
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
