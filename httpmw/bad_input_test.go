package httpmw

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/hostiletest"
)

// Bad input to every exported function: the documented panic for
// configuration that cannot work, a default or a clear status for the rest
// (see "Errors and panics" in the package doc).
func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"Middleware(nil)", func() { Middleware(nil) }, "nil *admission.Scheduler"},
		{"Tag with nil handler", func() { Tag("clone", nil, nil) }, "nil handler"},
		{"Principal(nil)", func() { Principal(nil) }, "nil getter"},
		{"WithCriticalityOffsets(not a level)", func() {
			Middleware(nil, WithCriticalityOffsets(map[criticality.Level]admission.Priority{2: 1}))
		}, "WithCriticalityOffsets: criticality offsets: Level(2) is not a level"},
		{"WithThrottle(negative window)", func() { Transport(nil, WithThrottle(-time.Second, 0)) }, "Window must be"},
		{"WithThrottle(1 ns window)", func() { Transport(nil, WithThrottle(time.Nanosecond, 0)) }, "Window must be"},
		{"WithThrottle(K below 1)", func() { Transport(nil, WithThrottle(0, 0.999)) }, "K must be"},
		{"WithThrottle(NaN K)", func() { Transport(nil, WithThrottle(0, math.NaN())) }, "K must be"},
		{"WithThrottle(infinite K)", func() { Transport(nil, WithThrottle(0, math.Inf(1))) }, "K must be"},
		{"WithThrottle(-infinite K)", func() { Transport(nil, WithThrottle(0, math.Inf(-1))) }, "K must be"},
		{"WithMaxPushback(negative)", func() { Transport(nil, WithMaxPushback(-1)) }, "MaxPushback must be"},
		{"WithMaxBackends(negative)", func() { Transport(nil, WithMaxBackends(-1)) }, "MaxBackends must be"},
	} {
		if got := hostiletest.PanicOf(tc.call); !strings.Contains(got, tc.want) {
			t.Errorf("%s: panic %q, want one saying %q", tc.name, got, tc.want)
		}
	}

	s := newScheduler(t, admission.Config{Capacity: 1}, admission.JobTypeConfig{})
	defer func() { must(t, s.Close(t.Context())) }()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	mux := http.NewServeMux()
	mux.Handle("POST /untyped", Tag("", nil, ok))
	mux.Handle("POST /nojobid", Tag("clone", nil, ok))
	mux.Handle("POST /emptyheader", Tag("clone", Header(""), ok))
	h := Middleware(s, nil, WithKeyFunc(nil), WithRejectHandler(nil), WithExempt(nil), WithMaxKeyLen(-1), WithDefaultJobType("", nil))(mux)
	for path, want := range map[string]int{
		"/untyped":     http.StatusInternalServerError, // job type "" was never registered
		"/nojobid":     http.StatusOK,
		"/emptyheader": http.StatusBadRequest,
	} {
		r := httptest.NewRequest("POST", path, nil)
		r.RemoteAddr = "203.0.113.7:1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Errorf("POST %s: %d, want %d", path, rec.Code, want)
		}
	}

	if _, err := FirstOf()(request("203.0.113.7:1")); !errors.Is(err, ErrNoKey) {
		t.Errorf("FirstOf(): %v", err)
	}
	if k, err := FirstOf(nil, ClientIP(nil, -7))(request("203.0.113.7:1")); err != nil || k != "ip:203.0.113.7" {
		t.Errorf("FirstOf(nil, ClientIP(nil, -7)) = %q, %v", k, err)
	}
	if k, _ := TrustedHeader("", nil)(request("10.0.0.2:1", "", "x")); k != "" {
		t.Errorf("TrustedHeader with no name and no trusted peers = %q", k)
	}
	if got := ForwardedClient(netip.Addr{}, nil, nil); got.IsValid() {
		t.Errorf("ForwardedClient(invalid, nil, nil) = %v", got)
	}
	for _, idf := range []JobIDFunc{PathValue(""), Header(""), Query("")} {
		if id, err := idf(httptest.NewRequest("GET", "/", nil)); err == nil {
			t.Errorf("a job ID function of an empty name gave %q", id)
		}
	}

	for _, tc := range []struct {
		rej  Rejection
		want int
	}{
		{RejectionFor(nil), http.StatusInternalServerError},
		{Rejection{}, http.StatusInternalServerError},
		{Rejection{Status: -1, RetryAfter: -5}, http.StatusInternalServerError},
		{Rejection{Status: 1000}, http.StatusInternalServerError},
		{Rejection{Status: http.StatusTooManyRequests, RetryAfter: 1 << 62}, http.StatusTooManyRequests},
	} {
		rec := httptest.NewRecorder()
		WriteRejection(rec, nil, tc.rej)
		if rec.Code != tc.want || rec.Body.Len() == 0 {
			t.Errorf("WriteRejection(%+v): %d %q, want %d and a body", tc.rej, rec.Code, rec.Body, tc.want)
		}
	}
}

// Bad input to the criticality options and Transport: nil and zero values
// mean the defaults, extreme offsets are clamped by the scheduler, trust
// predicates of nothing trust nobody, and a call type of any length or
// content is bounded.
func TestBadInputCriticalityAndTransport(t *testing.T) {
	s := newScheduler(t, admission.Config{Capacity: 1}, admission.JobTypeConfig{})
	defer func() { must(t, s.Close(t.Context())) }()
	// level sends a request from a trusted-looking peer with a verified
	// certificate of an empty subject, stating level, through a
	// middleware built with opts, and returns its status and the level
	// its handler saw.
	level := func(level string, opts ...Option) (int, string) {
		seen := "not run"
		h := Middleware(s, opts...)(cloneMux(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			l, ok := criticality.FromContext(r.Context())
			seen = fmt.Sprint(l, " ", ok)
		})))
		r := httptest.NewRequest("POST", "/repos/r/clone", nil)
		r.RemoteAddr = "10.0.0.5:1"
		r.Header.Set(criticality.Header, level)
		anon := &x509.Certificate{}
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{anon}, VerifiedChains: [][]*x509.Certificate{{anon}}}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code, seen
	}
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"WithCriticalityTrust(nil): nobody", []Option{WithCriticalityTrust(nil)}, "critical false"},
		{"PeerIn(): nobody", []Option{WithCriticalityTrust(PeerIn())}, "critical false"},
		{"PeerIn(invalid prefix): nobody", []Option{WithCriticalityTrust(PeerIn(netip.Prefix{}))}, "critical false"},
		{"ClientCertIn(\"\"): not an empty subject", []Option{WithCriticalityTrust(ClientCertIn(""))}, "critical false"},
		{"ClientCertIn(): nobody", []Option{WithCriticalityTrust(ClientCertIn())}, "critical false"},
		{"WithCriticalityOffsets(nil): the defaults", []Option{trustInternal, WithCriticalityOffsets(nil)}, "sheddable true"},
		{"extreme offsets", []Option{trustInternal, WithCriticalityOffsets(map[criticality.Level]admission.Priority{
			criticality.Sheddable: math.MinInt, criticality.CriticalPlus: math.MaxInt})}, "sheddable true"},
		{"WithMeterProvider(nil): the global one", []Option{trustInternal, WithMeterProvider(nil), nil}, "sheddable true"},
	} {
		if code, seen := level("sheddable", tc.opts...); code != http.StatusOK || seen != tc.want {
			t.Errorf("%s: %d, handler saw %q; want 200 and %q", tc.name, code, seen, tc.want)
		}
	}
	if code, seen := level("critical_plus", trustInternal, WithCriticalityOffsets(map[criticality.Level]admission.Priority{
		criticality.CriticalPlus: math.MaxInt})); code != http.StatusOK || seen != "critical_plus true" {
		t.Errorf("an offset of MaxInt: %d, handler saw %q", code, seen)
	}

	// Nil and zero values are the defaults.
	rt := Transport(nil, nil, WithThrottle(0, 0), WithMaxPushback(0), WithMaxBackends(0), WithCallType(nil), WithMeterProvider(nil))
	if tr := rt.(*transport); tr.next != http.DefaultTransport || tr.callType == nil {
		t.Errorf("Transport(nil, zero options): next %v, call type %p; want http.DefaultTransport and the default", tr.next, tr.callType)
	}
	// A call type of any length or content is bounded; "" holds the whole
	// host back.
	sent := 0
	for _, ct := range []string{strings.Repeat("\xff\x00", 1<<16), ""} {
		rt := Transport(hostileHost(http.StatusServiceUnavailable, []string{"60"}, &sent), WithCallType(func(*http.Request) string { return ct }))
		for _, path := range []string{"/a", "/b"} {
			r := httptest.NewRequest("GET", "http://h.test"+path, nil)
			if resp, err := rt.RoundTrip(r); err == nil {
				resp.Body.Close()
			}
		}
		if fp := rt.(*transport).th.Footprint(); fp.Pushbacks != 1 || fp.KeyBytes > 2*128 {
			t.Errorf("call type %.20q: footprint %+v; want one pushback, names of at most 128 bytes", ct, fp)
		}
	}
	if sent != 2 {
		t.Errorf("the host saw %d requests, want 2: one call type for both paths", sent)
	}
}

// Requests that http.Client never sends but a RoundTripper may be handed
// (by a proxy, a test, another RoundTripper): an error, never a panic.
// nil, and a nil URL, are refused before anything is counted, the body
// closed; a nil Header is the next RoundTripper's to judge, and gets the
// context's level in a header of its own.
func TestTransportBadRequests(t *testing.T) {
	var got []*http.Request
	next := rtFunc(func(r *http.Request) (*http.Response, error) {
		got = append(got, r)
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	rt := Transport(next)
	if resp, err := rt.RoundTrip(nil); err == nil || resp != nil || !strings.Contains(err.Error(), "nil *http.Request") {
		t.Errorf("RoundTrip(nil) = %v, %v; want an error naming the nil request", resp, err)
	}
	body := &closeRecorder{Reader: strings.NewReader("x")}
	noURL := &http.Request{Method: "GET", Header: http.Header{}, Body: body}
	if resp, err := rt.RoundTrip(noURL); err == nil || resp != nil || !strings.Contains(err.Error(), "nil Request.URL") || !body.closed {
		t.Errorf("a nil URL: %v, %v, body closed %v; want an error naming it and the body closed", resp, err, body.closed)
	}
	if len(got) != 0 {
		t.Fatalf("the next RoundTripper was called with %d bad requests", len(got))
	}

	ctx := criticality.NewContext(context.Background(), criticality.Sheddable)
	noHeader := (&http.Request{Method: "GET", URL: &url.URL{Scheme: "http", Host: "h.test", Path: "/"}}).WithContext(ctx)
	if _, err := rt.RoundTrip(noHeader); err != nil {
		t.Fatalf("a nil Header with a level: %v", err)
	}
	if len(got) != 1 || got[0].Header.Get(criticality.Header) != "sheddable" || noHeader.Header != nil {
		t.Errorf("a nil Header with a level: next saw %v, the caller's request has header %v; want the level sent and the caller's request unchanged", got, noHeader.Header)
	}
	noHeader = noHeader.WithContext(context.Background())
	if _, err := rt.RoundTrip(noHeader); err != nil || len(got) != 2 || got[1] != noHeader {
		t.Errorf("a nil Header without a level: %v; want it passed on as it is", err)
	}
}
