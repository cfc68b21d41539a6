package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/test/bufconn"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// inMemoryNetwork replaces loopback TCP with bufconn, so that the demo runs
// inside a synctest bubble, on fake time. The server sees every connection
// coming from 127.0.0.1, as on loopback, so it believes x-client.
type inMemoryNetwork struct {
	mu  sync.Mutex
	lis *bufconn.Listener // of the run in progress
}

func (n *inMemoryNetwork) listen() (net.Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lis = bufconn.Listen(1 << 20)
	return loopbackListener{n.lis}, nil
}

func (n *inMemoryNetwork) dial(ctx context.Context, _ string) (net.Conn, error) {
	n.mu.Lock()
	lis := n.lis
	n.mu.Unlock()
	return lis.DialContext(ctx)
}

type loopbackListener struct{ *bufconn.Listener }

func (l loopbackListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return loopbackConn{c}, nil
}

type loopbackConn struct{ net.Conn }

func (loopbackConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}

// runDemo runs the whole demo with the default load on fake time, for d per
// run, and returns its results, the table it printed and the path of its
// chart.
func runDemo(t *testing.T, d time.Duration) (results []*result, table, svgPath string) {
	t.Helper()
	cfg := defaultConfig()
	cfg.Duration = d
	cfg.SVG = filepath.Join(t.TempDir(), "demo.svg")
	var out bytes.Buffer
	var network inMemoryNetwork
	results, err := run(t.Context(), cfg, network.listen, network.dial, &out, progress{})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].name != runSemaphore || results[1].name != runFairseat {
		t.Fatalf("run returned %d results, want the semaphore run then the fairseat run", len(results))
	}
	for _, r := range results {
		for _, err := range r.errors {
			t.Errorf("%s run: unexpected call error: %v", r.name, err)
		}
	}
	return results, out.String(), cfg.SVG
}

func TestDemo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		results, table, svgPath := runDemo(t, 5*time.Second)
		sem, fair := results[0], results[1]
		t.Logf("table:\n%s", table)

		// Conflict exclusion, measured in the handlers (TestWriterCheck
		// shows the count works). The semaphore run is not required to
		// produce violations: in 5s of load its repacks and pulls may never
		// get a seat beside the flood, and whether one does depends on
		// goroutine order.
		if fair.violations != 0 {
			t.Errorf("fairseat run: %d conflict violations, want 0", fair.violations)
		}
		t.Logf("semaphore run: %d conflict violations", sem.violations)

		// Fairness: the light client is not stuck behind the heavy one.
		semLight, fairLight := sem.summarize(clientLight), fair.summarize(clientLight)
		if fairLight.p99.d >= semLight.p99.d {
			t.Errorf("light client p99 wait: fairseat %v, semaphore %v; want fairseat's smaller", fairLight.p99, semLight.p99)
		}
		if want := defaultConfig().LightClones; fairLight.done != want || fairLight.asked != want {
			t.Errorf("fairseat run: light client did %d of %d clones, want all %d", fairLight.done, fairLight.asked, want)
		}
		// The heavy client is held back, not shut out.
		if h := fair.summarize(clientHeavy); h.done == 0 {
			t.Errorf("fairseat run: the heavy client completed nothing")
		}
		// Background work is not starved behind the heavy client's burst.
		semBg, fairBg := sem.summarize(clientBackground), fair.summarize(clientBackground)
		if fairBg.done == 0 || fairBg.longest.d >= semBg.longest.d {
			t.Errorf("background: fairseat %d done, longest wait %v; semaphore %d done, longest wait %v; want fairseat to run some and wait less",
				fairBg.done, fairBg.longest, semBg.done, semBg.longest)
		}

		// The table renders, with every caller and the verdict.
		for _, want := range []string{
			"plain semaphore", "fairseat", "conflict violations", "background: longest wait", "Verdict:",
			clientDescriptions[clientHeavy], clientDescriptions[clientLight],
			clientDescriptions[clientUser], clientDescriptions[clientBackground],
		} {
			if !strings.Contains(table, want) {
				t.Errorf("table lacks %q", want)
			}
		}

		checkSVG(t, svgPath)
	})
}

// checkSVG checks that the chart is well-formed XML whose root is an svg
// element with one area per client and run.
func checkSVG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	var root string
	polygons := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "polygon" {
				polygons++
			}
		}
	}
	if root != "svg" {
		t.Errorf("chart root element is %q, want svg", root)
	}
	if want := 2 * len(clients); polygons != want {
		t.Errorf("chart has %d areas, want %d (one per client and run)", polygons, want)
	}
}

func TestWriterCheck(t *testing.T) {
	w := newWriterCheck()
	leaveA := w.enter("a", true)
	leaveB := w.enter("b", true)  // another repository: fine
	leaveA2 := w.enter("a", true) // writer beside writer: 1
	leaveR := w.enter("a", false) // reader beside writers: 2
	leaveA2()
	leaveA()
	leaveR2 := w.enter("a", false) // reader beside reader: fine
	w.enter("a", true)()           // writer beside readers: 3
	leaveR()
	leaveR2()
	w.enter("a", true)() // after everyone left: fine
	leaveB()
	if got := w.count(); got != 3 {
		t.Errorf("violations = %d, want 3", got)
	}
}

func TestPercentile(t *testing.T) {
	var ws []wait
	for i := 1; i <= 100; i++ {
		ws = append(ws, wait{d: time.Duration(i) * time.Millisecond})
	}
	if p50, p99 := percentile(ws, 0.5), percentile(ws, 0.99); p50.d != 50*time.Millisecond || p99.d != 99*time.Millisecond {
		t.Errorf("p50, p99 = %v, %v; want 50ms, 99ms", p50, p99)
	}
	if p := percentile(ws[:1], 0.99); p.d != time.Millisecond {
		t.Errorf("p99 of one = %v, want 1ms", p)
	}
	if p := percentile(nil, 0.5); p != (wait{}) {
		t.Errorf("p50 of none = %v, want zero", p)
	}
}

// TestSlowdown: when the disk slows to half, adaptive capacity comes down
// towards what it can do and clones on it run faster than under the fixed
// capacity; the light client keeps its place in line.
func TestSlowdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 60s: the phase's runs take 30s each, the disk is slow for 10s of
		// them. (With the default 20s, 3.3s slow, the limit has not always
		// come down yet, and the demo's text says so.)
		cfg := defaultConfig()
		cfg.Duration = 60 * time.Second
		var out bytes.Buffer
		var network inMemoryNetwork
		results, err := runSlowdown(t.Context(), cfg, network.listen, network.dial, &out)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("table:\n%s", out.String())
		if len(results) != 2 || results[0].name != runFixed || results[1].name != runAdaptive {
			t.Fatalf("runSlowdown returned %d results, want the fixed run then the adaptive run", len(results))
		}
		for _, r := range results {
			for _, err := range r.errors {
				t.Errorf("%s run: unexpected call error: %v", r.name, err)
			}
		}
		f, a := results[0].summarize(), results[1].summarize()
		if f.limitSlow != float64(cfg.Capacity) {
			t.Errorf("fixed run: %.1f seats while slow, want %d", f.limitSlow, cfg.Capacity)
		}
		if a.limitSlow > 0.8*float64(cfg.Capacity) || a.limitSlow < 2 {
			t.Errorf("adaptive run: %.1f seats on average while the disk does %d, want it near that", a.limitSlow, cfg.Capacity/2)
		}
		if a.stretch >= f.stretch {
			t.Errorf("clones on the slow disk took %.2f× their full-speed time with adaptive capacity, %.2f× with fixed: want adaptive faster",
				a.stretch, f.stretch)
		}
		// Fairness puts the light client first: its median wait is a small
		// part of a clone. Its longest waits come when the limit falls and
		// nobody is admitted until the running clones drain below it, so
		// they are bounded by how long a clone holds a seat, not by the
		// heavy client's queue. (30 runs: median at most 25ms; p99 at
		// most 0.75 of the clones' p99 seat time.)
		if a.lightWaitP50 > 100*time.Millisecond {
			t.Errorf("adaptive run: the light client's median wait is %v, want it short (fairness puts it first)", a.lightWaitP50)
		}
		if a.lightWaitP99 > a.seatP99 {
			t.Errorf("adaptive run: the light client's p99 wait is %v, longer than a clone's p99 time on the disk (%v)", a.lightWaitP99, a.seatP99)
		}
		if !strings.Contains(out.String(), "What to look at:") {
			t.Error("the phase's output lacks its explanation")
		}
	})
}
