package throttle

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Defaults of Config.
const (
	DefaultWindow      = 2 * time.Minute
	DefaultK           = 2.0
	DefaultMaxBackends = 1024
	DefaultMaxPushback = 5 * time.Minute
)

// ErrInvalidConfig is returned (wrapped) by New for a bad Config; the
// message names the field.
var ErrInvalidConfig = errors.New("throttle: invalid config")

// Config configures a Throttle. The zero value is the defaults.
type Config struct {
	Window      time.Duration // sliding window of the counts; 0 = DefaultWindow, else at least 60 ns
	K           float64       // accepts multiplier; 0 = DefaultK, else at least 1
	MaxBackends int           // backends remembered (LRU); 0 = DefaultMaxBackends
	MaxPushback time.Duration // longest pushback honoured; 0 = DefaultMaxPushback
}

// Reason says why a request was refused locally, or that it was not. The
// zero value is Allowed.
type Reason uint8

const (
	// Allowed: the request may go to the backend.
	Allowed Reason = iota
	// Throttled: adaptive throttling refused it.
	Throttled
	// PushedBack: the backend asked for no such call until later.
	PushedBack
)

func (r Reason) String() string {
	switch r {
	case Allowed:
		return "allowed"
	case Throttled:
		return "throttled"
	case PushedBack:
		return "pushed_back"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Decision is what Decide decided about one request. The zero value is a
// request allowed with nothing in the window. It is a plain value.
type Decision struct {
	Reason Reason
	// P is the probability of refusal the window gave (0 under pushback).
	P float64
	// Requests and Accepts are the window's counts the decision saw.
	Requests, Accepts int64
	// RetryAfter is, under pushback, the time left before such a call may
	// go to the backend again.
	RetryAfter time.Duration
	// Code is, under pushback, the code of the response that asked for it;
	// when throttled, the code of the backend's last response that was not
	// an accept (0 if none was seen since the backend was first used).
	Code int
}

// Outcome is how a request that went to the backend ended. The zero value
// is a response that says the backend is overloaded, with no code and no
// pushback. It is a plain value.
type Outcome struct {
	// Accepted is false when the response says the backend is overloaded.
	Accepted bool
	// Code is the response's code (a gRPC code, an HTTP status); the
	// adapters return it on later local refusals.
	Code int
	// Pushback, if positive, asks for no such call before now+Pushback
	// (capped at Config.MaxPushback).
	Pushback time.Duration
}

// Stats are a Throttle's totals since New. The zero value is no activity.
// It is a plain value.
type Stats struct {
	Requests   int64 // requests counted: throttled, and outcomes recorded
	Accepts    int64 // outcomes recorded as accepted
	Throttled  int64 // refused by adaptive throttling
	PushedBack int64 // refused under pushback
	Pushbacks  int64 // pushbacks recorded from the backends
}

// A Throttle decides, per backend, whether a request goes to it (see the
// package doc). Create it with New; the zero value is not usable. It is
// safe for concurrent use.
type Throttle struct {
	width       time.Duration // Window / buckets. Never changes.
	k           float64       // Never changes.
	maxPushback time.Duration // Never changes.

	mu       sync.Mutex                          // guards the fields below
	backends *simplelru.LRU[string, *backendRec] // at most MaxBackends, least recently used evicted
	// front and frontRec are the LRU's most recently used entry, or "" and
	// nil: a call to the same backend as the one before (the usual case: a
	// ClientConn has one target) finds its record without hashing, and the
	// LRU order is the same, since marking the newest entry used again
	// moves nothing. The LRU evicts only in Add, after which
	// backendLocked makes the added entry the front, so the front is never
	// an evicted entry.
	front    string
	frontRec *backendRec
	stats    Stats
}

// backendRec is one backend's state.
type backendRec struct {
	win       window
	lastCode  int       // code of the last outcome that was not an accept
	pushbacks pushbacks // nil until the first pushback
}

// New returns a Throttle, or an error wrapping ErrInvalidConfig that names
// the bad field.
func New(cfg Config) (*Throttle, error) {
	switch {
	case cfg.Window == 0:
		cfg.Window = DefaultWindow
	case cfg.Window < buckets:
		return nil, fmt.Errorf("%w: Window must be 0 or at least %d ns, got %v", ErrInvalidConfig, buckets, cfg.Window)
	}
	switch {
	case cfg.K == 0:
		cfg.K = DefaultK
	case !(cfg.K >= 1) || math.IsInf(cfg.K, 1):
		return nil, fmt.Errorf("%w: K must be 0 or a finite number of at least 1 (below 1 a healthy backend would be throttled), got %v", ErrInvalidConfig, cfg.K)
	}
	switch {
	case cfg.MaxBackends == 0:
		cfg.MaxBackends = DefaultMaxBackends
	case cfg.MaxBackends < 0:
		return nil, fmt.Errorf("%w: MaxBackends must be 0 or positive, got %d", ErrInvalidConfig, cfg.MaxBackends)
	}
	switch {
	case cfg.MaxPushback == 0:
		cfg.MaxPushback = DefaultMaxPushback
	case cfg.MaxPushback < 0:
		return nil, fmt.Errorf("%w: MaxPushback must be 0 or positive, got %v", ErrInvalidConfig, cfg.MaxPushback)
	}
	lru, err := simplelru.NewLRU[string, *backendRec](cfg.MaxBackends, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: MaxBackends: %v", ErrInvalidConfig, err)
	}
	return &Throttle{width: cfg.Window / buckets, k: cfg.K, maxPushback: cfg.MaxPushback, backends: lru}, nil
}

// Decide decides whether a request of kind call goes to backend at now.
// When P > 0, draw is called once, under the Throttle's lock, for a
// uniform random number in [0, 1) (it must not use the Throttle): the
// request is throttled when that number is below P, and then counted in
// the window as a request. (Drawing only then saves the draw on every
// call to a healthy backend.) A request
// that goes to the backend is counted when Record records its outcome, so
// that requests in flight, which have no outcome yet, do not count as
// refused by the backend (a burst of calls to a backend just met would
// otherwise throttle itself). A request refused under pushback is not
// counted.
func (t *Throttle) Decide(backend, call string, now time.Duration, draw func() float64) Decision {
	backend, call = boundKey(backend), boundKey(call) // outside the lock: a long name is hashed
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.backendLocked(backend, now)
	if len(b.pushbacks) > 0 { // the usual case skips the lookup
		if p, ok := b.pushbacks.active(call, now); ok {
			t.stats.PushedBack++
			return Decision{Reason: PushedBack, RetryAfter: p.until - now, Code: p.code}
		}
	}
	b.win.advance(now, t.width)
	d := Decision{P: b.win.refusal(t.k), Requests: b.win.total.requests, Accepts: b.win.total.accepts}
	if d.P > 0 && draw() < d.P {
		d.Reason, d.Code = Throttled, b.lastCode
		b.win.add(1, 0)
		t.stats.Requests++
		t.stats.Throttled++
	}
	return d
}

// Record records the outcome of a request of kind call that Decide let go
// to backend, at now: it counts as a request, and as an accept if o says
// so.
func (t *Throttle) Record(backend, call string, now time.Duration, o Outcome) {
	backend, call = boundKey(backend), boundKey(call)
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.backendLocked(backend, now)
	b.win.advance(now, t.width)
	t.stats.Requests++
	if o.Accepted {
		b.win.add(1, 1)
		t.stats.Accepts++
	} else {
		b.win.add(1, 0)
		b.lastCode = o.Code
	}
	if o.Pushback > 0 {
		if b.pushbacks == nil {
			b.pushbacks = pushbacks{}
		}
		b.pushbacks.set(call, pushback{until: addSat(now, min(o.Pushback, t.maxPushback)), code: o.Code}, now)
		t.stats.Pushbacks++
	}
}

// Stats returns the totals since New.
func (t *Throttle) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// Footprint is what a Throttle holds at one instant: what its memory
// grows with. The zero value is an empty Throttle. It is a plain value.
type Footprint struct {
	Backends     int // remembered, at most Config.MaxBackends
	Pushbacks    int // held by all backends, expired ones not yet pruned included
	MaxPushbacks int // held by the backend that holds most, at most 64
	KeyBytes     int // of the backend and call names kept, each at most 128
}

// Footprint returns what t holds now (for tests and diagnostics: it visits
// every backend under the lock).
func (t *Throttle) Footprint() Footprint {
	t.mu.Lock()
	defer t.mu.Unlock()
	var f Footprint
	for _, name := range t.backends.Keys() {
		b, _ := t.backends.Peek(name)
		f.Backends++
		f.KeyBytes += len(name)
		f.Pushbacks += len(b.pushbacks)
		f.MaxPushbacks = max(f.MaxPushbacks, len(b.pushbacks))
		for call := range b.pushbacks {
			f.KeyBytes += len(call)
		}
	}
	return f
}

// backendLocked returns backend's state, new (its window starting at now)
// if it is not remembered.
func (t *Throttle) backendLocked(backend string, now time.Duration) *backendRec {
	if t.frontRec != nil && backend == t.front {
		return t.frontRec // small enough to be inlined: the usual case costs no call
	}
	return t.lookupLocked(backend, now)
}

// lookupLocked is backendLocked for a backend other than the front one.
func (t *Throttle) lookupLocked(backend string, now time.Duration) *backendRec {
	b, ok := t.backends.Get(backend)
	if !ok {
		b = &backendRec{win: window{base: now, curEnd: now + t.width}}
		t.backends.Add(backend, b)
	}
	t.front, t.frontRec = backend, b
	return b
}

// addSat returns now+d (d > 0), or the latest instant if that overflows
// (a MaxPushback close to the longest Duration).
func addSat(now, d time.Duration) time.Duration {
	if now > math.MaxInt64-d {
		return math.MaxInt64
	}
	return now + d
}
