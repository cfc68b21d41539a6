package httpmw

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/clientkey"
	"github.com/fairseat/fairseat/internal/throttle"
)

// A TransportOption configures [Transport]. Nil options are ignored; when
// an option is given twice the last one wins. Options are plain values,
// safe to share.
type TransportOption interface{ applyTransport(*transportConfig) }

type transportOptionFunc func(*transportConfig)

func (f transportOptionFunc) applyTransport(c *transportConfig) { f(c) }

type transportConfig struct {
	throttle throttle.Config
	callType func(*http.Request) string
	meter    metric.MeterProvider
	rand     func() float64 // tests only (export_test.go)
}

// WithThrottle sets the sliding window over which Transport counts a
// host's requests and accepts (default 2 minutes, at least 60 ns) and the
// multiplier K (default 2, at least 1): a host is sent about K times what
// it accepts. 0 keeps a default. Transport panics on other values.
func WithThrottle(window time.Duration, k float64) TransportOption {
	return transportOptionFunc(func(c *transportConfig) { c.throttle.Window, c.throttle.K = window, k })
}

// WithMaxPushback caps the Retry-After a host may ask for (default 5
// minutes), so that one response cannot silence it for good. 0 keeps the
// default; Transport panics on a negative d.
func WithMaxPushback(d time.Duration) TransportOption {
	return transportOptionFunc(func(c *transportConfig) { c.throttle.MaxPushback = d })
}

// WithMaxBackends bounds the hosts Transport keeps counts for (default
// 1024, least recently used forgotten). 0 keeps the default; Transport
// panics on a negative n.
func WithMaxBackends(n int) TransportOption {
	return transportOptionFunc(func(c *transportConfig) { c.throttle.MaxBackends = n })
}

// WithCallType sets the kind of call a Retry-After applies to: requests
// for which f returns the same string are held back together. The default
// is the method and the path ("POST /repos/linux/clone"); return a route
// pattern ("POST /repos/{repo}/clone") to hold back a whole route, or ""
// to hold back the whole host.
func WithCallType(f func(*http.Request) string) TransportOption {
	return transportOptionFunc(func(c *transportConfig) { c.callType = f })
}

// withRand replaces the random source of the throttle's draws (tests).
func withRand(f func() float64) TransportOption {
	return transportOptionFunc(func(c *transportConfig) { c.rand = f })
}

// ErrRefusedLocally is matched (errors.Is) by the error of a request that
// Transport refused without sending it; errors.As finds its
// *RefusedError.
var ErrRefusedLocally = errors.New("httpmw: refused locally")

// A RefusedError is the error of a request that Transport refused without
// sending it: what the host would likely have answered, as an error
// instead of a response (http.Client wraps it in a *url.Error). Transport
// sets every field (RetryAfter is 0 when throttled); the zero value is no
// refusal of Transport's. It is a plain value.
type RefusedError struct {
	// Status is the HTTP status the host would likely have given: that of
	// its last overload response (503 or 429), or under pushback that of
	// the response whose Retry-After is in force; 503 when none is known.
	Status int
	// RetryAfter is, under pushback, the time left before such a request
	// may go to the host; 0 when adaptive throttling refused it.
	RetryAfter time.Duration
	// Host is the host the request was for; Throttled says whether
	// adaptive throttling (true) or a Retry-After (false) refused it.
	Host      string
	Throttled bool
}

func (e *RefusedError) Error() string {
	if e.Throttled {
		return fmt.Sprintf("httpmw: refused locally (%d %s): %s is rejecting most requests (adaptive throttling)", e.Status, http.StatusText(e.Status), e.Host)
	}
	return fmt.Sprintf("httpmw: refused locally (%d %s): %s asked for no such request for another %v (Retry-After)", e.Status, http.StatusText(e.Status), e.Host, e.RetryAfter)
}

// Is makes errors.Is(err, ErrRefusedLocally) hold.
func (e *RefusedError) Is(target error) bool { return target == ErrRefusedLocally }

// Transport returns a RoundTripper that sends each request through next
// (http.DefaultTransport if nil), adding the context's criticality
// (header Fairseat-Criticality, unless the request has one), and protects
// the hosts it calls from overload: adaptive throttling per host (the
// request URL's host), and the hosts' Retry-After per kind of call (see
// WithCallType). 429 and 503 responses, and errors of next when the
// request's context has not ended (the host is unreachable), count as not
// accepted; any other response as accepted. A Retry-After (seconds or an
// HTTP date) on a 429 or 503 holds that kind of call back for that long.
// A request it refuses is not sent: RoundTrip closes its body and returns
// a *RefusedError (errors.Is ErrRefusedLocally) that says which status the
// host would likely have given. A nil request or one without a URL fails
// with an error before anything is counted. It panics on invalid options;
// the RoundTripper is safe for concurrent use.
func Transport(next http.RoundTripper, opts ...TransportOption) http.RoundTripper {
	var c transportConfig
	for _, o := range opts {
		if o != nil {
			o.applyTransport(&c)
		}
	}
	th, err := throttle.New(c.throttle)
	if err != nil {
		panic("httpmw: Transport options: " + err.Error())
	}
	t := &transport{next: next, th: th, tm: throttle.NewTelemetry(c.meter, ScopeName), clock: throttle.NewClock(), callType: c.callType, rand: c.rand}
	if t.next == nil {
		t.next = http.DefaultTransport
	}
	if t.callType == nil {
		t.callType = func(r *http.Request) string { return r.Method + " " + r.URL.Path }
	}
	if t.rand == nil {
		t.rand = rand.Float64
	}
	return t
}

// transport is built once and only read afterwards.
type transport struct {
	next     http.RoundTripper
	th       *throttle.Throttle
	tm       *throttle.Telemetry
	clock    throttle.Clock
	callType func(*http.Request) string
	rand     func() float64
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	switch {
	case r == nil:
		return nil, errors.New("httpmw: Transport: nil *http.Request")
	case r.URL == nil:
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, errors.New("httpmw: Transport: nil Request.URL")
	}
	ctx := r.Context()
	// Keys are bounded: a redirect may name any host and path.
	host, call := clientkey.Bound(r.URL.Host, 0), clientkey.Bound(t.callType(r), 0)
	now := t.clock.Now()
	d := t.th.Decide(host, call, now, t.rand)
	t.tm.Decided(ctx, host, call, d)
	if d.Reason != throttle.Allowed {
		if r.Body != nil {
			_ = r.Body.Close() // RoundTrip closes the body, even on errors
		}
		status := d.Code
		if status == 0 {
			status = http.StatusServiceUnavailable
		}
		return nil, &RefusedError{Status: status, RetryAfter: d.RetryAfter, Host: host, Throttled: d.Reason == throttle.Throttled}
	}
	resp, err := t.next.RoundTrip(withOutgoingLevel(r))
	o := throttle.Outcome{Accepted: true}
	switch {
	case err != nil && ctx.Err() == nil:
		o = throttle.Outcome{Code: http.StatusServiceUnavailable}
	case err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable):
		now = t.clock.Now() // a Retry-After counts from the response
		o = throttle.Outcome{Code: resp.StatusCode, Pushback: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	t.th.Record(host, call, now, o)
	t.tm.Recorded(ctx, host, call, o)
	return resp, err
}

// withOutgoingLevel returns r with the context's criticality in header
// Fairseat-Criticality, a copy if it had to add it; a request that states
// a level itself keeps it.
func withOutgoingLevel(r *http.Request) *http.Request {
	l, ok := criticality.FromContext(r.Context())
	if !ok || len(r.Header.Values(criticality.Header)) > 0 {
		return r
	}
	r = r.Clone(r.Context()) // a RoundTripper must not change the request it was given
	if r.Header == nil {     // http.Client never sends one; a caller of RoundTrip may
		r.Header = http.Header{}
	}
	r.Header.Set(criticality.Header, l.String())
	return r
}

// retryAfter parses a Retry-After value, delay-seconds (digits only; too
// many for a time.Duration is the longest one, which the throttle caps) or
// an HTTP date, relative to now, surrounding spaces ignored; 0 when it is
// missing, malformed or not in the future.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if secs, ok := throttle.ParseDelay(v, time.Second); ok {
		return secs
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}
