package httpmw

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"testing/synctest"

	"go.opentelemetry.io/otel/attribute"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/hostiletest"
	"github.com/fairseat/fairseat/internal/oteltest"
)

// Every hostile Fairseat-Criticality header (hostiletest.Criticalities), from a trusted and an
// untrusted peer, through the middleware: the request runs (never an error
// to the caller); an untrusted peer never gets a level and is counted as
// untrusted; a trusted one gets the level of the table, queued at that
// level's offset, or none, counted as invalid.
func TestHostileCriticalityHeader(t *testing.T) {
	offsets := map[string]admission.Priority{"-": 0, "sheddable": -2, "critical_plus": 1}
	for _, tc := range hostiletest.Criticalities {
		for _, peer := range []string{"10.0.0.5:1", "203.0.113.7:1"} {
			synctest.Test(t, func(t *testing.T) {
				rec := oteltest.New()
				got := critScenario(t, []critRequest{{"x", peer, tc.Values}}, trustInternal, WithMeterProvider(rec.MeterProvider))
				want, untrusted, invalid := tc.Level, 0.0, 0.0
				switch {
				case peer == "203.0.113.7:1":
					want, untrusted = "-", 1
				case want == "-":
					invalid = 1
				}
				if got.seen["x"] != want || got.prio["x"] != 8+offsets[want] {
					t.Errorf("%s from %s: handler level %q, queued at %d; want %q at %d (%v)", tc.Name, peer, got.seen["x"], got.prio["x"], want, 8+offsets[want], got)
				}
				m, err := rec.Collect(t.Context())
				must(t, err)
				reason := attribute.Key("fairseat.criticality.reason")
				u, _ := m.Value("fairseat.criticality.ignored", reason.String("untrusted"))
				i, _ := m.Value("fairseat.criticality.ignored", reason.String("invalid"))
				if u != untrusted || i != invalid {
					t.Errorf("%s from %s: ignored %v untrusted, %v invalid; want %v and %v", tc.Name, peer, u, i, untrusted, invalid)
				}
			})
		}
	}
}

// Over the wire, net/http decides first what reaches the middleware: the
// header name in any case is the same header, spaces and tabs around the
// value are trimmed (so a padded level from a trusted peer counts), a
// control character fails the request with 400 before the middleware
// runs, and bytes above 0x7f arrive as they are (and are ignored).
func TestHostileCriticalityOnTheWire(t *testing.T) {
	s := newScheduler(t, admission.Config{Capacity: 4}, admission.JobTypeConfig{})
	defer func() { must(t, s.Close(t.Context())) }()
	seen := make(chan string, 1)
	h := Middleware(s, WithCriticalityTrust(PeerIn(netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"))))(cloneMux(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l, ok := criticality.FromContext(r.Context())
		seen <- fmt.Sprint(l, " ", ok)
	})))
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tc := range []struct {
		name, lines string
		status      int
		level       string // "" when the handler must not run
	}{
		{"lower-case name", "fairseat-criticality: sheddable\r\n", 200, "sheddable true"},
		{"upper-case name", "FAIRSEAT-CRITICALITY: SHEDDABLE\r\n", 200, "sheddable true"},
		{"spaces and tabs", "Fairseat-Criticality: \t sheddable \t \r\n", 200, "sheddable true"},
		{"two lines", "Fairseat-Criticality: sheddable\r\nFairseat-Criticality: sheddable\r\n", 200, "critical false"},
		{"obs-text", "Fairseat-Criticality: sheddable\xff\r\n", 200, "critical false"},
		{"control", "Fairseat-Criticality: shed\x01dable\r\n", 400, ""},
		{"NUL", "Fairseat-Criticality: sheddable\x00\r\n", 400, ""},
	} {
		status := rawRequest(t, srv.Listener.Addr().String(), "POST /repos/r/clone HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"+tc.lines+"\r\n")
		level := ""
		select {
		case level = <-seen:
		default:
		}
		if status != tc.status || level != tc.level {
			t.Errorf("%s: %d, handler saw %q; want %d, %q", tc.name, status, level, tc.status, tc.level)
		}
	}
}

// rawRequest writes req to a new connection to addr and returns the
// response's status code.
func rawRequest(t *testing.T, addr, req string) int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	must(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte(req))
	must(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	must(t, err)
	resp.Body.Close()
	return resp.StatusCode
}
