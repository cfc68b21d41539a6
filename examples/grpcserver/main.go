// Command grpcserver is a git cache served over gRPC behind fairseat.
//
//	go run ./examples/grpcserver
//
// The service git.v1.Git has Clone, Fetch (server-streaming) and Repack.
// The interceptors package admits clones and fetches through an
// admission.Scheduler: each caller (client certificate, trusted tenant
// metadata or IP address) gets a fair share of the seats, clones and
// fetches of one repository run together, and a caller with too many
// requests waiting is refused with ResourceExhausted and a retry hint.
// Repack queues a background job (Scheduler.Submit) that runs alone on
// its repository.
//
// An admin listener serves /metrics (OpenTelemetry metrics through the
// Prometheus exporter: otelgrpc's RPC metrics and the scheduler's) and
// /debug/admission (the scheduler's live state, from loopback only).
// SIGINT or SIGTERM stops the server gracefully. See README.md for calls
// with grpcurl.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fairseat/fairseat/examples/internal/gitcache"
)

func main() {
	cfg := config{Logger: slog.Default()}
	var trusted string
	flag.StringVar(&cfg.GRPCAddr, "grpc-addr", "127.0.0.1:50051", "gRPC listen address (port 0: any free port)")
	flag.StringVar(&cfg.AdminAddr, "admin-addr", "127.0.0.1:9464", "admin listen address for /metrics and /debug/admission")
	flag.IntVar(&cfg.Capacity, "capacity", 4, "seats: clones, fetches and repacks that may run at once")
	flag.IntVar(&cfg.MaxQueued, "max-queued", 8, "requests one client may have waiting for a seat")
	flag.StringVar(&trusted, "trusted-peers", "", "comma-separated CIDR prefixes whose x-tenant-id metadata is believed")
	flag.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "how long calls in flight, then queued repacks, may take at shutdown")
	flag.StringVar(&cfg.CostFile, "cost-file", os.Getenv(gitcache.CostFileEnv),
		"file that keeps the learned cost of each job across restarts (default $"+gitcache.CostFileEnv+"; empty: none)")
	flag.Parse()
	prefixes, err := gitcache.ParsePrefixes(trusted)
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcserver: -trusted-peers:", err)
		os.Exit(2)
	}
	cfg.TrustedPeers = prefixes
	cfg.Listening = func(grpcAddr, adminAddr string) {
		fmt.Printf("gRPC:    %s\nmetrics: http://%s/metrics\ndebug:   http://%s/debug/admission\n", grpcAddr, adminAddr, adminAddr)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "grpcserver:", err)
		os.Exit(1)
	}
}
