package httpmw

import (
	"context"
	"net/url"

	"errors"
	"github.com/fairseat/fairseat/criticality"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/fairseat/fairseat/admission"
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
	} {
		if got := panicOf(tc.call); !strings.Contains(got, tc.want) {
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

// panicOf returns what f panicked with, or "".
func panicOf(f func()) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			msg, _ = v.(string)
			if msg == "" {
				msg = "a panic that is not a string"
			}
		}
	}()
	f()
	return ""
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
