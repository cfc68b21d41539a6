package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/httpmw"
)

// The job types. Clones and fetches read a repository and may run together
// on it (Access Shared); a repack rewrites it and runs alone (Exclusive).
// The three share the conflict group "git", so a repack of a repository
// waits, holding no seat, until its clones and fetches are done.
const (
	jobClone  admission.JobType = "clone"
	jobFetch  admission.JobType = "fetch"
	jobRepack admission.JobType = "repack"
)

// config is what main reads from flags; tests fill it in directly.
type config struct {
	Addr            string         // the API's listener
	AdminAddr       string         // /metrics and /debug/admission
	Capacity        int            // seats
	MaxQueued       int            // requests one client may have waiting
	TrustedProxies  []netip.Prefix // peers whose X-Forwarded-For and X-Tenant-ID are believed
	ShutdownTimeout time.Duration  // for requests in flight, and again for Scheduler.Close
	Work            WorkFunc       // nil: simulate
	Logger          *slog.Logger   // nil: slog.Default()
	// Listening, if set, is called once both listeners are open, with
	// their actual addresses (useful with port 0).
	Listening func(addr, adminAddr string)
}

// run serves until ctx ends, then shuts down: the API server stops
// gracefully (requests in flight finish, up to ShutdownTimeout), the
// scheduler closes (queued repacks still run, up to ShutdownTimeout), and
// the admin listener closes last, so that /debug/admission shows the drain.
func run(ctx context.Context, cfg config) (err error) {
	if cfg.Work == nil {
		cfg.Work = simulate
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	tel, err := newTelemetry("fairseat-httpserver")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, tel.shutdown(context.Background())) }()

	sched, err := newScheduler(cfg, tel)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return errors.Join(err, sched.Close(context.Background()))
	}
	adminLis, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		lis.Close()
		return errors.Join(err, sched.Close(context.Background()))
	}

	api := &http.Server{Handler: newHandler(cfg, sched, tel), ReadHeaderTimeout: 10 * time.Second}
	admin := &http.Server{Handler: adminMux(sched, tel.metrics), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 2)
	go func() { serveErr <- api.Serve(lis) }()
	go func() { serveErr <- admin.Serve(adminLis) }()
	if cfg.Listening != nil {
		cfg.Listening(lis.Addr().String(), adminLis.Addr().String())
	}

	select {
	case <-ctx.Done():
	case err = <-serveErr: // a listener failed: shut down the rest
	}
	cfg.Logger.Info("shutting down")
	shutdown(api, cfg.ShutdownTimeout)

	closeCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if cerr := sched.Close(closeCtx); cerr != nil {
		err = errors.Join(err, fmt.Errorf("closing the scheduler: %w", cerr))
	}
	if serr := admin.Shutdown(closeCtx); serr != nil {
		err = errors.Join(err, serr)
	}
	return err
}

// shutdown lets requests in flight finish, but for no longer than timeout;
// then it closes their connections, which cancels their contexts (and so
// takes requests still waiting for a seat out of the queue).
func shutdown(srv *http.Server, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if srv.Shutdown(ctx) != nil {
		srv.Close()
	}
}

// newHandler is the API: the mux behind the admission middleware, all of
// it measured and traced by otelhttp (rejections included).
func newHandler(cfg config, sched *admission.Scheduler, tel *telemetry) http.Handler {
	mux := http.NewServeMux()
	(&gitCache{sched: sched, work: cfg.Work}).routes(mux)
	admit := httpmw.Middleware(sched,
		// Who the caller is: the verified client certificate under mTLS
		// (serve with a tls.Config that verifies client certs), else the
		// tenant a trusted proxy names in X-Tenant-ID, else the client's
		// IP address (from X-Forwarded-For only behind a trusted proxy).
		httpmw.WithKeyFunc(httpmw.FirstOf(
			httpmw.ClientCert(),
			httpmw.TrustedHeader("X-Tenant-ID", cfg.TrustedProxies),
			httpmw.ClientIP(cfg.TrustedProxies, 64),
		)),
		// A health check queued behind the load would make a busy server
		// look dead.
		httpmw.WithExempt(func(r *http.Request) bool { return r.URL.Path == "/healthz" }),
	)
	// httpmw wraps the mux itself: it asks the mux which route will serve
	// a request to see whether the route is tagged.
	return otelhttp.NewHandler(admit(mux), "git-cache",
		otelhttp.WithMeterProvider(tel.mp), otelhttp.WithTracerProvider(tel.tp))
}

func newScheduler(cfg config, tel *telemetry) (*admission.Scheduler, error) {
	sched, err := admission.New(admission.Config{
		Capacity: cfg.Capacity,
		// Each client may have MaxQueued requests waiting; more are
		// refused with 429 and Retry-After. Background work (the key "")
		// is bounded only by the total queue.
		DefaultKey: admission.KeyPolicy{MaxQueued: cfg.MaxQueued},
		Keys:       map[string]admission.KeyPolicy{"": {}},
		// A repack waiting behind a stream of clones ages up to urgent
		// (priority 50, above the clones' 40) after at most 25s.
		Aging: &admission.AgingConfig{Grace: 5 * time.Second, Interval: 5 * time.Second, Step: 10, Urgent: 50},
	},
		admission.WithMeterProvider(tel.mp),
		admission.WithTracerProvider(tel.tp),
		admission.WithLogger(cfg.Logger),
	)
	if err != nil {
		return nil, err
	}
	types := map[admission.JobType]admission.JobTypeConfig{
		jobClone: {DefaultCost: time.Second, ConflictGroup: "git", Access: admission.Shared,
			Priority: admission.PriorityForeground, MaxWait: 30 * time.Second},
		jobFetch: {DefaultCost: 600 * time.Millisecond, ConflictGroup: "git", Access: admission.Shared,
			Priority: admission.PriorityForeground, MaxWait: 30 * time.Second},
		// Repacks are background jobs: at most 2 at once, a repeated
		// request for a repository already queued is absorbed.
		jobRepack: {DefaultCost: 3 * time.Second, ConflictGroup: "git", Access: admission.Exclusive,
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

// adminMux serves the operator's endpoints. Keep it on its own listener,
// never the public one.
func adminMux(sched *admission.Scheduler, metrics http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	// The debug page shows fairness keys (client addresses, tenants) and
	// job IDs. Answering only loopback callers keeps this example safe on
	// a laptop; a real deployment needs real access control here
	// (authentication, an operator network), as for net/http/pprof.
	mux.Handle("/debug/admission", loopbackOnly(admission.DebugHandler(sched)))
	return mux
}

func loopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ap, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil || !ap.Addr().IsLoopback() {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// telemetry is the OpenTelemetry SDK set up for the example: metrics go to
// a Prometheus registry of its own (served on /metrics), spans to a tracer
// provider without an exporter (add sdktrace.WithBatcher with an OTLP
// exporter to send them somewhere).
type telemetry struct {
	mp      *sdkmetric.MeterProvider
	tp      *sdktrace.TracerProvider
	metrics http.Handler
}

func newTelemetry(service string) (*telemetry, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, err
	}
	res := resource.NewSchemaless(attribute.String("service.name", service))
	return &telemetry{
		mp:      sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res)),
		tp:      sdktrace.NewTracerProvider(sdktrace.WithResource(res)),
		metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
	}, nil
}

func (t *telemetry) shutdown(ctx context.Context) error {
	return errors.Join(t.tp.Shutdown(ctx), t.mp.Shutdown(ctx))
}
