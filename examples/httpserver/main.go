// Command httpserver is a git cache served over net/http behind fairseat.
//
//	go run ./examples/httpserver
//
// GET /clone/{repo...} and GET /fetch/{repo...} (which streams its answer)
// are tagged with httpmw.Tag and admitted through an admission.Scheduler by
// httpmw.Middleware: each caller (client certificate, trusted tenant header
// or IP address) gets a fair share of the seats, clones and fetches of one
// repository run together, and a caller with too many requests waiting is
// refused with 429 and Retry-After. POST /repack/{repo...} queues a
// background job (Scheduler.Submit) that runs alone on its repository.
// GET /healthz never waits.
//
// An admin listener serves /metrics (OpenTelemetry metrics through the
// Prometheus exporter: otelhttp's HTTP metrics and the scheduler's) and
// /debug/admission (the scheduler's live state, from loopback only).
// SIGINT or SIGTERM stops the server gracefully. See README.md for calls
// with curl.
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
	flag.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "API listen address (port 0: any free port)")
	flag.StringVar(&cfg.AdminAddr, "admin-addr", "127.0.0.1:9465", "admin listen address for /metrics and /debug/admission")
	flag.IntVar(&cfg.Capacity, "capacity", 4, "seats: clones, fetches and repacks that may run at once")
	flag.IntVar(&cfg.MaxQueued, "max-queued", 8, "requests one client may have waiting for a seat")
	flag.StringVar(&trusted, "trusted-proxies", "", "comma-separated CIDR prefixes whose X-Forwarded-For and X-Tenant-ID are believed")
	flag.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "how long requests in flight, then queued repacks, may take at shutdown")
	flag.StringVar(&cfg.CostFile, "cost-file", os.Getenv(gitcache.CostFileEnv),
		"file that keeps the learned cost of each job across restarts (default $"+gitcache.CostFileEnv+"; empty: none)")
	flag.Parse()
	prefixes, err := gitcache.ParsePrefixes(trusted)
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpserver: -trusted-proxies:", err)
		os.Exit(2)
	}
	cfg.TrustedProxies = prefixes
	cfg.Listening = func(addr, adminAddr string) {
		fmt.Printf("API:     http://%s/\nmetrics: http://%s/metrics\ndebug:   http://%s/debug/admission\n", addr, adminAddr, adminAddr)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "httpserver:", err)
		os.Exit(1)
	}
}
