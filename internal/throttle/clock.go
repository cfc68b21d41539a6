package throttle

import "time"

// A Clock reads the time of the adapters' decisions from the monotonic
// clock alone: one reading, where time.Now takes two (the wall clock as
// well; about 70 ns against 40 on the VM of benchmarks/CLIENT.md, a
// tenth of the client interceptor's own time). A Throttle compares
// instants by their monotonic readings, so the wall clock reading it
// would not use is not taken: a Clock's times carry the wall clock of
// NewClock plus the time elapsed since, which drifts from the system's
// if that is set; use time.Now for what needs the wall clock (an HTTP
// date). Inside a testing/synctest bubble, where times carry no
// monotonic reading, Now is time.Now of the bubble's fake clock. Create
// a Clock with NewClock (the zero value is not usable); it is a plain
// value, safe for concurrent use.
type Clock struct{ start time.Time }

// NewClock returns a Clock whose times count from now.
func NewClock() Clock { return Clock{start: time.Now()} }

// Now returns the current time.
func (c Clock) Now() time.Time { return c.start.Add(time.Since(c.start)) }
