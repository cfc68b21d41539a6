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

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/examples/internal/gitcache"
	"github.com/fairseat/fairseat/httpmw"
)

// config is what main reads from flags; tests fill it in directly.
type config struct {
	Addr            string            // the API's listener
	AdminAddr       string            // /metrics and /debug/admission
	Capacity        int               // seats
	MaxQueued       int               // requests one client may have waiting
	TrustedProxies  []netip.Prefix    // peers whose X-Forwarded-For and X-Tenant-ID are believed
	ShutdownTimeout time.Duration     // for requests in flight, and again for Scheduler.Close
	Work            gitcache.WorkFunc // nil: simulate
	Logger          *slog.Logger      // nil: slog.Default()
	CostFile        string            // keeps learned costs across restarts; "": none
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
		cfg.Work = gitcache.Simulate
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	tel, err := gitcache.NewTelemetry("fairseat-httpserver")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, tel.Shutdown(context.Background())) }()

	sched, err := gitcache.NewScheduler(cfg.Capacity, cfg.MaxQueued, cfg.CostFile, tel, cfg.Logger)
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
	admin := &http.Server{Handler: gitcache.AdminMux(sched, tel.Metrics), ReadHeaderTimeout: 10 * time.Second}
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
func newHandler(cfg config, sched *admission.Scheduler, tel *gitcache.Telemetry) http.Handler {
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
		otelhttp.WithMeterProvider(tel.MeterProvider), otelhttp.WithTracerProvider(tel.TracerProvider))
}
