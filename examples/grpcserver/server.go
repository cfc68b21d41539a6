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

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/examples/internal/gitcache"
	"github.com/fairseat/fairseat/interceptors"
)

// config is what main reads from flags; tests fill it in directly.
type config struct {
	GRPCAddr        string            // gRPC listener
	AdminAddr       string            // /metrics and /debug/admission
	Capacity        int               // seats
	MaxQueued       int               // requests one client may have waiting
	TrustedPeers    []netip.Prefix    // peers whose x-tenant-id metadata is believed
	ShutdownTimeout time.Duration     // for GracefulStop, and again for Scheduler.Close
	Work            gitcache.WorkFunc // nil: simulate
	Logger          *slog.Logger      // nil: slog.Default()
	CostFile        string            // keeps learned costs across restarts; "": none
	// Listening, if set, is called once both listeners are open, with
	// their actual addresses (useful with port 0).
	Listening func(grpcAddr, adminAddr string)
}

// run serves until ctx ends, then shuts down: the gRPC server stops
// gracefully (calls in flight finish, up to ShutdownTimeout), the scheduler
// closes (queued repacks still run, up to ShutdownTimeout), and the admin
// listener closes last, so that /debug/admission shows the drain.
func run(ctx context.Context, cfg config) (err error) {
	if cfg.Work == nil {
		cfg.Work = gitcache.Simulate
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	tel, err := gitcache.NewTelemetry("fairseat-grpcserver")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, tel.Shutdown(context.Background())) }()

	sched, err := gitcache.NewScheduler(cfg.Capacity, cfg.MaxQueued, cfg.CostFile, tel, cfg.Logger)
	if err != nil {
		return err
	}
	grpcLis, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return errors.Join(err, sched.Close(context.Background()))
	}
	adminLis, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		grpcLis.Close()
		return errors.Join(err, sched.Close(context.Background()))
	}

	srv, healthSrv := newGRPCServer(cfg, sched, tel)
	admin := &http.Server{Handler: gitcache.AdminMux(sched, tel.Metrics), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 2)
	go func() { serveErr <- srv.Serve(grpcLis) }()
	go func() { serveErr <- admin.Serve(adminLis) }()
	if cfg.Listening != nil {
		cfg.Listening(grpcLis.Addr().String(), adminLis.Addr().String())
	}

	select {
	case <-ctx.Done():
	case err = <-serveErr: // a listener failed: shut down the rest
	}
	cfg.Logger.Info("shutting down")
	healthSrv.Shutdown() // health checks now answer NOT_SERVING
	gracefulStop(srv, cfg.ShutdownTimeout)

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

// gracefulStop lets calls in flight finish, but for no longer than timeout.
func gracefulStop(srv *grpc.Server, timeout time.Duration) {
	done := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		srv.Stop() // cancels the calls still running or waiting for a seat
		<-done
	}
}

// newGRPCServer wires the interceptors, the otelgrpc stats handler, the
// health service (never queued: the interceptors exempt it) and reflection.
func newGRPCServer(cfg config, sched *admission.Scheduler, tel *gitcache.Telemetry) (*grpc.Server, *health.Server) {
	opts := []interceptors.Option{
		interceptors.WithRoutes(interceptors.Routes{
			cloneMethod: {Type: gitcache.Clone, JobID: interceptors.Field("value")},
			// Fetch streams its answer: admit it on its request message,
			// which names the repository, and hold the seat to the end.
			fetchMethod: {Type: gitcache.Fetch, JobID: interceptors.Field("value"), Stream: interceptors.FirstMessage},
			// Repack has no route: the call only queues a background job
			// (Scheduler.Submit), which waits for its own seat.
		}),
		// Who the caller is: the verified client certificate under mTLS
		// (add grpc.Creds with a tls.Config that verifies client certs),
		// else the tenant a trusted gateway names in x-tenant-id, else
		// the client's IP address.
		interceptors.WithKeyFunc(interceptors.FirstOf(
			interceptors.ClientCert(),
			interceptors.TrustedMetadata("x-tenant-id", interceptors.PeerIn(cfg.TrustedPeers...)),
			interceptors.ClientIP(64),
		)),
	}
	srv := grpc.NewServer(
		grpc.StatsHandler(otelgrpc.NewServerHandler(
			otelgrpc.WithMeterProvider(tel.MeterProvider), otelgrpc.WithTracerProvider(tel.TracerProvider))),
		grpc.ChainUnaryInterceptor(interceptors.UnaryServerInterceptor(sched, opts...)),
		grpc.ChainStreamInterceptor(interceptors.StreamServerInterceptor(sched, opts...)),
	)
	srv.RegisterService(&gitServiceDesc, &gitCache{sched: sched, work: cfg.Work})
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	reflection.Register(srv)
	return srv, hs
}
