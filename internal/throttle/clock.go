package throttle

import "time"

// A Clock gives the instants a Throttle works with: the time since the
// Clock was made, from the monotonic clock alone. That is one reading,
// where time.Now takes two (the wall clock as well; about 70 ns against
// 40 on the VM of benchmarks/CLIENT.md, a tenth of the client
// interceptor's own time), and an instant that is an integer compares
// and adds without the monotonic bookkeeping of a time.Time. Inside a
// testing/synctest bubble a Clock follows the bubble's fake clock, even
// one made outside it. Create it with NewClock (the zero value is not
// usable); it is a plain value, safe for concurrent use.
type Clock struct{ start time.Time }

// NewClock returns a Clock that counts from now.
func NewClock() Clock { return Clock{start: time.Now()} }

// Now returns the time elapsed since NewClock.
func (c Clock) Now() time.Duration { return time.Since(c.start) }
