package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/interceptors"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testWork stands in for git: a clone of "hold" blocks until release is
// closed, and every repack is reported on repacked.
type testWork struct {
	started  chan string
	release  chan struct{}
	repacked chan string
}

func (w *testWork) do(ctx context.Context, op, repo string) error {
	switch {
	case repo == "hold":
		w.started <- op
		select {
		case <-w.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	case op == "repack":
		w.repacked <- repo
	}
	return nil
}

// startServer runs the example until the test ends and returns its gRPC
// and admin addresses. The cleanup checks that run shut down cleanly.
func startServer(t *testing.T, cfg config) (grpcAddr, adminAddr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	type addrs struct{ grpc, admin string }
	listening := make(chan addrs, 1)
	cfg.Listening = func(g, a string) { listening <- addrs{g, a} }
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	select {
	case a := <-listening:
		return a.grpc, a.admin
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
		return "", ""
	}
}

func TestServer(t *testing.T) {
	// A safety net only: nothing below waits for time to pass.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := &testWork{started: make(chan string), release: make(chan struct{}), repacked: make(chan string, 1)}
	grpcAddr, adminAddr := startServer(t, config{
		GRPCAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		Capacity: 1, MaxQueued: 1,
		TrustedPeers:    []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		ShutdownTimeout: 10 * time.Second,
		Work:            w.do,
		Logger:          slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	admin := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	// Admitted calls: a clone, a streamed fetch, a queued repack, and a
	// health check (exempt from admission).
	out := new(wrapperspb.StringValue)
	if err := cc.Invoke(ctx, cloneMethod, wrapperspb.String("github.com/golang/go"), out); err != nil || out.GetValue() != "cloned github.com/golang/go" {
		t.Fatalf("Clone = %q, %v", out.GetValue(), err)
	}
	if got := fetch(ctx, t, cc, "github.com/golang/go"); len(got) != 3 {
		t.Fatalf("Fetch streamed %q, want 3 messages", got)
	}
	if err := cc.Invoke(ctx, repackMethod, wrapperspb.String("github.com/golang/go"), new(emptypb.Empty)); err != nil {
		t.Fatalf("Repack: %v", err)
	}
	if repo := <-w.repacked; repo != "github.com/golang/go" {
		t.Fatalf("repacked %q", repo)
	}
	if hc, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health check = %v, %v", hc, err)
	}

	// Tenant "ci" (named in metadata, believed from loopback) holds the one
	// seat and has one clone waiting: its next clone is refused.
	ci := metadata.AppendToOutgoingContext(ctx, "x-tenant-id", "ci")
	errs := make(chan error, 2)
	go func() { errs <- cc.Invoke(ci, cloneMethod, wrapperspb.String("hold"), new(wrapperspb.StringValue)) }()
	<-w.started
	go func() { errs <- cc.Invoke(ci, cloneMethod, wrapperspb.String("other"), new(wrapperspb.StringValue)) }()
	waitQueued(ctx, t, admin, adminAddr, 1)
	var trailer metadata.MD
	err = cc.Invoke(ci, cloneMethod, wrapperspb.String("third"), new(wrapperspb.StringValue), grpc.Trailer(&trailer))
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted {
		t.Fatalf("third clone of tenant ci: %v, want ResourceExhausted", err)
	}
	if len(trailer.Get(interceptors.PushbackTrailer)) != 1 || !hasRetryInfo(st) {
		t.Errorf("rejection without a retry hint: trailer %v, details %v", trailer, st.Details())
	}
	close(w.release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("clone of tenant ci: %v", err)
		}
	}

	// /metrics has otelgrpc's RPC metrics. (The scheduler records no
	// metrics of its own yet; when it does, they appear here too.)
	metrics := get(ctx, t, admin, "http://"+adminAddr+"/metrics")
	if !strings.Contains(metrics, "rpc_server_") || !strings.Contains(metrics, `fairseat_requests_total{fairseat_result="rejected_queue_full"`) {
		t.Errorf("/metrics has no rpc_server_ metric or no fairseat rejection count:\n%s", metrics)
	}

	snap := debugSnapshot(ctx, t, admin, adminAddr)
	c := snap.Counters
	if c.Admitted != 5 || c.RejectedQueueFull != 1 || c.Exempt != 1 {
		t.Errorf("counters: admitted %d, rejected_queue_full %d, exempt %d; want 5, 1, 1", c.Admitted, c.RejectedQueueFull, c.Exempt)
	}
	if snap.Capacity != 1 || len(snap.Types) != 3 {
		t.Errorf("debug snapshot: capacity %d, %d types; want 1, 3", snap.Capacity, len(snap.Types))
	}
}

// TestReflection checks that grpcurl can describe git.v1.Git.
func TestReflection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	grpcAddr, _ := startServer(t, config{GRPCAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", Capacity: 1, ShutdownTimeout: 10 * time.Second})
	cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	stream, err := reflectionpb.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.CloseSend()
	err = stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "git.v1.Git"},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if files := resp.GetFileDescriptorResponse().GetFileDescriptorProto(); len(files) == 0 {
		t.Fatalf("no descriptor for git.v1.Git: %v", resp)
	}
}

func fetch(ctx context.Context, t *testing.T, cc *grpc.ClientConn, repo string) []string {
	t.Helper()
	desc := &grpc.StreamDesc{ServerStreams: true}
	stream, err := cc.NewStream(ctx, desc, fetchMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(wrapperspb.String(repo)); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		m := new(wrapperspb.StringValue)
		err := stream.RecvMsg(m)
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		got = append(got, m.GetValue())
	}
}

func hasRetryInfo(st *status.Status) bool {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().AsDuration() > 0 {
			return true
		}
	}
	return false
}

// snapshot is the part of /debug/admission?format=json the test reads.
type snapshot struct {
	Capacity int `json:"capacity"`
	Queued   int `json:"queued"`
	Types    []struct {
		Type string `json:"type"`
	} `json:"types"`
	Counters struct {
		Admitted          uint64 `json:"admitted"`
		RejectedQueueFull uint64 `json:"rejected_queue_full"`
		Exempt            uint64 `json:"exempt"`
	} `json:"counters"`
}

func debugSnapshot(ctx context.Context, t *testing.T, c *http.Client, adminAddr string) snapshot {
	t.Helper()
	var s snapshot
	body := get(ctx, t, c, "http://"+adminAddr+"/debug/admission?format=json")
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("decoding /debug/admission: %v\n%s", err, body)
	}
	return s
}

// waitQueued polls the debug page until n requests wait for a seat.
func waitQueued(ctx context.Context, t *testing.T, c *http.Client, adminAddr string, n int) {
	t.Helper()
	for debugSnapshot(ctx, t, c, adminAddr).Queued != n {
		select {
		case <-ctx.Done():
			t.Fatalf("never %d queued", n)
		case <-time.After(time.Millisecond):
		}
	}
}

func get(ctx context.Context, t *testing.T, c *http.Client, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v\n%s", url, resp.Status, err, body)
	}
	return string(body)
}
