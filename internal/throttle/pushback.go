package throttle

import (
	"math"
	"time"

	"github.com/fairseat/fairseat/internal/clientkey"
)

// maxPushbacks bounds the kinds of call under pushback per backend.
const maxPushbacks = 64

// maxKeyLen bounds the backend and call names a Throttle keeps.
const maxKeyLen = clientkey.DefaultMaxLen

// boundKey returns name, or for a name longer than maxKeyLen its digest
// (clientkey.Bound), so that what a Throttle keeps per backend is bounded
// whatever names it is given: a gRPC proxy forwards the methods its own
// callers name, an HTTP redirect names any host and path. A name of
// maxKeyLen bytes or fewer is kept as it is (one length comparison: the
// usual case costs nothing), so two names map to one key only if a long
// name's digest collides.
func boundKey(name string) string {
	if len(name) <= maxKeyLen {
		return name
	}
	return clientkey.Bound(name, maxKeyLen)
}

// pushback is a backend's request not to call it again, for one kind of
// call, before until (a Clock reading).
type pushback struct {
	until time.Duration
	code  int // of the response that asked
}

// pushbacks holds a backend's pushbacks by kind of call; expired ones are
// deleted when looked up or when room is needed. It takes no locks.
type pushbacks map[string]pushback

// active returns the pushback of call in force at now. (Decide calls it
// only when ps has entries: the usual case costs no call and no hashing.)
func (ps pushbacks) active(call string, now time.Duration) (pushback, bool) {
	p, ok := ps[call]
	if !ok {
		return pushback{}, false
	}
	if now >= p.until {
		delete(ps, call)
		return pushback{}, false
	}
	return p, true
}

// set records p for call, keeping the later end if one is in force, and
// makes room if the table is full: expired entries go first, then the
// entry that ends first.
func (ps pushbacks) set(call string, p pushback, now time.Duration) {
	if old, ok := ps[call]; ok {
		p.until = max(p.until, old.until)
		ps[call] = p
		return
	}
	if len(ps) >= maxPushbacks {
		var first string
		var firstEnd time.Duration
		found := false
		for c, q := range ps {
			switch {
			case now >= q.until:
				delete(ps, c)
			case !found || q.until < firstEnd:
				first, firstEnd, found = c, q.until, true
			}
		}
		if len(ps) >= maxPushbacks {
			delete(ps, first)
		}
	}
	ps[call] = p
}

// ParseDelay reads a retry delay as the wire states it, a decimal count of
// unit (grpc-retry-pushback-ms: milliseconds; Retry-After: seconds):
// ASCII digits only, no sign, no space, at least one. A count too large for
// a Duration is the longest Duration (Record caps it at
// Config.MaxPushback). ok is false for anything else, however many digits
// it starts with. unit must be positive; the work is one pass over s.
func ParseDelay(s string, unit time.Duration) (d time.Duration, ok bool) {
	if s == "" || unit <= 0 {
		return 0, false
	}
	limit := uint64(math.MaxInt64 / unit) // the largest count that fits
	var n uint64
	over := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		// n <= limit/10 keeps n*10 + digit below 2^64: no wrap-around.
		if next := n*10 + uint64(c-'0'); !over && n <= limit/10 && next <= limit {
			n = next
		} else {
			over = true
		}
	}
	if over {
		return math.MaxInt64, true
	}
	return time.Duration(n) * unit, true
}
