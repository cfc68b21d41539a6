// Package gitcache is what the gRPC and HTTP examples share: the git
// cache's job types and scheduler, its simulated work, the OpenTelemetry
// set-up, and the operator's endpoints (/metrics and /debug/admission).
// Only the transport differs between the two examples.
package gitcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/fairseat/fairseat/admission"
)

// The job types. Clones and fetches read a repository and may run together
// on it (Access Shared); a repack rewrites it and runs alone (Exclusive).
// The three share the conflict group "git", so a repack of a repository
// waits, holding no seat, until its clones and fetches are done.
const (
	Clone  admission.JobType = "clone"
	Fetch  admission.JobType = "fetch"
	Repack admission.JobType = "repack"
)

// CostFileEnv is the environment variable that names the cost file when
// the -cost-file flag is not given.
const CostFileEnv = "FAIRSEAT_COST_FILE"

// NewScheduler returns the git cache's scheduler: capacity seats, at most
// maxQueued requests waiting per client (more are refused with a retry
// hint; background work, the key "", is bounded only by the total queue),
// reporting to tel and logging to logger. With a costFile, the costs it
// learns survive a restart: they are loaded from the file now, and saved
// to it every minute and when the scheduler closes (a missing file is a
// first start; a damaged one is logged and ignored).
func NewScheduler(capacity, maxQueued int, costFile string, tel *Telemetry, logger *slog.Logger) (*admission.Scheduler, error) {
	var store admission.CostStore // nil: learned costs die with the process
	if costFile != "" {
		store = admission.FileCostStore(costFile)
	}
	sched, err := admission.New(admission.Config{
		Capacity:   capacity,
		DefaultKey: admission.KeyPolicy{MaxQueued: maxQueued},
		Keys:       map[string]admission.KeyPolicy{"": {}},
		// A repack waiting behind a stream of clones ages up to urgent
		// (priority 50, above the clones' 40) after at most 25s.
		Aging: &admission.AgingConfig{Grace: 5 * time.Second, Interval: 5 * time.Second, Step: 10, Urgent: 50},
	},
		admission.WithMeterProvider(tel.MeterProvider),
		admission.WithTracerProvider(tel.TracerProvider),
		admission.WithLogger(logger),
		admission.WithCostStore(store, admission.DefaultCostSaveInterval),
	)
	if err != nil {
		return nil, err
	}
	types := map[admission.JobType]admission.JobTypeConfig{
		Clone: {DefaultCost: time.Second, ConflictGroup: "git", Access: admission.Shared,
			Priority: admission.PriorityForeground, MaxWait: 30 * time.Second},
		Fetch: {DefaultCost: 600 * time.Millisecond, ConflictGroup: "git", Access: admission.Shared,
			Priority: admission.PriorityForeground, MaxWait: 30 * time.Second},
		// Repacks are background jobs: at most 2 at once, a repeated
		// request for a repository already queued is absorbed.
		Repack: {DefaultCost: 3 * time.Second, ConflictGroup: "git", Access: admission.Exclusive,
			Priority: admission.PriorityBackground, MaxConcurrency: 2, MaxWait: 10 * time.Minute,
			Duplicates: admission.Coalesce},
	}
	for t, c := range types {
		if err := sched.RegisterType(t, c); err != nil {
			return nil, errors.Join(err, sched.Close(context.Background()))
		}
	}
	return sched, nil
}

// A WorkFunc does the work of one operation ("clone", "fetch" or "repack")
// on repo. The examples' default only sleeps; tests pass their own.
type WorkFunc func(ctx context.Context, op, repo string) error

// Simulate stands for real git work: it sleeps, cut short if ctx ends.
func Simulate(ctx context.Context, op, _ string) error {
	d := map[string]time.Duration{"clone": time.Second, "fetch": 200 * time.Millisecond, "repack": 3 * time.Second}[op]
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Telemetry is the OpenTelemetry SDK set up for the examples: metrics go to
// a Prometheus registry of their own (served by Metrics), spans to a tracer
// provider without an exporter (add sdktrace.WithBatcher with an OTLP
// exporter to send them somewhere).
type Telemetry struct {
	MeterProvider  *sdkmetric.MeterProvider
	TracerProvider *sdktrace.TracerProvider
	Metrics        http.Handler // the Prometheus text of MeterProvider's metrics
}

// NewTelemetry sets up the SDK for the named service.
func NewTelemetry(service string) (*Telemetry, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, err
	}
	res := resource.NewSchemaless(attribute.String("service.name", service))
	return &Telemetry{
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res)),
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithResource(res)),
		Metrics:        promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
	}, nil
}

// Shutdown flushes and stops both providers.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	return errors.Join(t.TracerProvider.Shutdown(ctx), t.MeterProvider.Shutdown(ctx))
}

// AdminMux serves the operator's endpoints. Keep it on its own listener,
// never the public one.
func AdminMux(sched *admission.Scheduler, metrics http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	// The debug page shows fairness keys (client addresses, tenants) and
	// job IDs. Answering only loopback callers keeps this example safe on
	// a laptop; a real deployment needs real access control here
	// (authentication, an operator network), as for net/http/pprof.
	mux.Handle("/debug/admission", LoopbackOnly(admission.DebugHandler(sched)))
	return mux
}

// LoopbackOnly answers 403 to every caller not on the loopback interface.
func LoopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ap, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil || !ap.Addr().IsLoopback() {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ParsePrefixes parses a comma-separated list of CIDR prefixes (a flag).
func ParsePrefixes(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for p := range strings.SplitSeq(list, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", p, err)
		}
		out = append(out, prefix)
	}
	return out, nil
}
