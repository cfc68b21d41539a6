package interceptors_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/interceptors"
	"github.com/fairseat/fairseat/internal/soaktest"
)

// TestSoakInterceptors runs the interceptors in a real gRPC server over
// loopback TCP under many concurrent clients: unary calls, server streams
// admitted at their first message and bidirectional streams, with
// deadlines, cancellations, clients that hang up mid-stream or close their
// connection, hostile metadata; handlers that block, fail, or panic — through
// the interceptor to a recovery interceptor outside it, or into one inside
// it (grpc-go recovers no panic: without a recovery interceptor a handler's
// panic ends the process, so there is no "without" to run in-process).
// Halfway through the server is stopped with GracefulStop while a second
// takes over, and at the end the second is stopped under load too. Every
// call gets exactly one status; the server sees each call's handler run at
// most once and never admits a call without an outcome; handlers never
// exceed the seats or mix an exclusive job with another on a repository;
// afterwards nothing runs or is queued and no goroutine is left.
func TestSoakInterceptors(t *testing.T) {
	soakInterceptors(t, nil, "interceptors (gRPC over loopback TCP)")
}

// TestSoakInterceptorsAdaptive is TestSoakInterceptors with adaptive
// capacity (soakAdaptive): the seats move under the handlers, which still
// never exceed the bound (Max, the fixed soak's capacity), and queue-delay
// shedding refuses arrivals with Unavailable.
func TestSoakInterceptorsAdaptive(t *testing.T) {
	soakInterceptors(t, soakAdaptive(), "interceptors (gRPC over loopback TCP, adaptive capacity)")
}

// soakAdaptive is the adaptive capacity of the adaptive soaks: between 1
// and the fixed soak's seats, probing every five rounds, shedding when
// the queue's least wait stays above 2 ms for 10 ms.
func soakAdaptive() *admission.AdaptiveConfig {
	return &admission.AdaptiveConfig{Min: 1, Max: grpcSoakCapacity, ProbeInterval: 5,
		QueueDelayTarget: 2 * time.Millisecond, QueueDelayInterval: 10 * time.Millisecond}
}

func soakInterceptors(t *testing.T, adaptive *admission.AdaptiveConfig, name string) {
	d := soaktest.Duration(t, time.Second)
	k := newGRPCSoak(t, soaktest.Seed(t), adaptive)
	took := k.run(d)
	k.check()
	k.sum.Log(t, name, took)
	k.sum.Check(t)
	goleak.VerifyNone(t)
}

const (
	grpcSoakClients  = 12
	grpcSoakCapacity = 4
)

type grpcSoak struct {
	t    *testing.T
	seed uint64
	s    *admission.Scheduler
	sum  soaktest.Summary

	addr  atomic.Pointer[string] // the server new connections dial
	stops soaktest.Stops
	stop  atomic.Bool

	entered, finished atomic.Int64 // calls the server saw
	started, returned atomic.Int64 // calls the clients made

	mu     sync.Mutex
	seats  int
	byRepo map[string][2]int // shared, exclusive handlers running
	codes  map[codes.Code]int64
}

// soakCall is the server's record of one call.
type soakCall struct{ ran atomic.Int32 }

type soakCallKey struct{}

func newGRPCSoak(t *testing.T, seed uint64, adaptive *admission.AdaptiveConfig) *grpcSoak {
	k := &grpcSoak{t: t, seed: seed, byRepo: map[string][2]int{}, codes: map[codes.Code]int64{}}
	s, err := admission.New(admission.Config{Capacity: grpcSoakCapacity, MaxQueue: 40,
		DefaultKey: admission.KeyPolicy{MaxQueued: 6, MaxInFlight: 3}, Adaptive: adaptive})
	if err != nil {
		t.Fatal(err)
	}
	for typ, c := range map[admission.JobType]admission.JobTypeConfig{
		"clone": {Priority: 8, ConflictGroup: "git", MaxWait: 40 * time.Millisecond, DefaultCost: time.Millisecond},
		"fetch": {Priority: 8, ConflictGroup: "git", Access: admission.Shared, MaxWait: 40 * time.Millisecond, DefaultCost: time.Millisecond},
		"push":  {Priority: 8, ConflictGroup: "git", MaxWait: 40 * time.Millisecond, DefaultCost: time.Millisecond},
	} {
		if err := s.RegisterType(typ, c); err != nil {
			t.Fatal(err)
		}
	}
	k.s = s
	return k
}

// server builds a server: accounting outermost, then recovery, then the
// fairseat interceptors, then a recovery of their own for handlers that
// ask for it ("recover"), then the service.
func (k *grpcSoak) server() *grpc.Server {
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	opts := []interceptors.Option{
		interceptors.WithRoutes(interceptors.Routes{
			cloneMethod: {Type: "clone", JobID: interceptors.Field("value")},
			fetchMethod: {Type: "fetch", JobID: interceptors.Field("value"), Stream: interceptors.FirstMessage},
			pushMethod:  {Type: "push", JobID: interceptors.MetadataValue("x-repo")},
		}),
		interceptors.WithKeyFunc(interceptors.FirstOf(
			interceptors.TrustedMetadata("x-tenant-id", interceptors.PeerIn(loopback)),
			interceptors.ClientIP(64))),
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(k.accountUnary, recovery.UnaryServerInterceptor(),
			interceptors.UnaryServerInterceptor(k.s, opts...), innerRecoveryUnary),
		grpc.ChainStreamInterceptor(k.accountStream, recovery.StreamServerInterceptor(),
			interceptors.StreamServerInterceptor(k.s, opts...), innerRecoveryStream),
	)
	git := &gitServer{
		clone: func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			return wrapperspb.String("cloned"), k.work(ctx, req.GetValue(), true, nil)
		},
		fetch: func(req *wrapperspb.StringValue, ss grpc.ServerStream) error {
			return k.work(ss.Context(), req.GetValue(), false, func() error {
				for range 10 {
					if err := ss.SendMsg(wrapperspb.String("pack")); err != nil {
						return err
					}
					time.Sleep(300 * time.Microsecond)
				}
				return nil
			})
		},
		push: func(ss grpc.ServerStream) error {
			repo := metadata.ValueFromIncomingContext(ss.Context(), "x-repo")[0]
			return k.work(ss.Context(), repo, true, func() error {
				for {
					if err := ss.RecvMsg(new(wrapperspb.StringValue)); errors.Is(err, io.EOF) {
						return ss.SendMsg(wrapperspb.String("pushed"))
					} else if err != nil {
						return err
					}
				}
			})
		},
	}
	srv.RegisterService(&gitDesc, git)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	return srv
}

// accountUnary and accountStream give each call its record and check, when
// it ends, that its handler ran at most once, and that a call whose handler
// did not run failed.
func (k *grpcSoak) accountUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	rec := &soakCall{}
	k.entered.Add(1)
	defer k.settle(info.FullMethod, rec, nil)
	resp, err := h(context.WithValue(ctx, soakCallKey{}, rec), req)
	k.settle(info.FullMethod, rec, &err)
	return resp, err
}

func (k *grpcSoak) accountStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	rec := &soakCall{}
	k.entered.Add(1)
	defer k.settle(info.FullMethod, rec, nil)
	err := h(srv, ctxStream{ss, context.WithValue(ss.Context(), soakCallKey{}, rec)})
	k.settle(info.FullMethod, rec, &err)
	return err
}

// settle is called with the call's error when it returns, and again (err
// nil) by a defer, which finds the call settled unless a panic got past
// the recovery interceptor.
func (k *grpcSoak) settle(method string, rec *soakCall, err *error) {
	if err == nil {
		if rec.ran.Load() >= 0 {
			k.sum.Lostf(k.t, "%s: a panic got past the recovery interceptor", method)
		}
		return
	}
	ran := rec.ran.Swap(-1) // settled
	k.finished.Add(1)
	if ran > 1 || (ran == 0 && *err == nil && !strings.HasPrefix(method, "/grpc.health")) {
		k.sum.Lostf(k.t, "%s: handler ran %d times, call returned %v", method, ran, *err)
	}
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }

// innerRecovery turns the panic of a handler that asked for it into an
// error before the fairseat interceptor sees it.
func innerRecoveryUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer recoverIfAsked(ctx, &err)
	return h(ctx, req)
}

func innerRecoveryStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	defer recoverIfAsked(ss.Context(), &err)
	return h(srv, ss)
}

func recoverIfAsked(ctx context.Context, err *error) {
	if behave(ctx) != "recover" {
		return
	}
	if v := recover(); v != nil {
		*err = status.Errorf(codes.Internal, "recovered inside: %v", v)
	}
}

func behave(ctx context.Context) string {
	if vs := metadata.ValueFromIncomingContext(ctx, "x-behave"); len(vs) == 1 {
		return vs[0]
	}
	return ""
}

// work is every handler's body: it counts itself running, then behaves as
// the client asked. The seat is held from before it starts to after it
// returns, so its counts never exceed what the scheduler allows.
func (k *grpcSoak) work(ctx context.Context, repo string, excl bool, body func() error) error {
	if rec, _ := ctx.Value(soakCallKey{}).(*soakCall); rec != nil {
		rec.ran.Add(1)
	} else {
		k.sum.Violationf(k.t, "handler without its call record")
	}
	k.enter(repo, excl)
	defer k.leave(repo, excl)
	switch behave(ctx) {
	case "slow":
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	case "panic", "recover":
		panic("soak: handler panicked")
	case "fail":
		return status.Error(codes.FailedPrecondition, "soak: handler failed")
	default:
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
	}
	if body != nil {
		return body()
	}
	return nil
}

func (k *grpcSoak) enter(repo string, excl bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seats++
	use := k.byRepo[repo]
	if excl {
		use[1]++
	} else {
		use[0]++
	}
	k.byRepo[repo] = use
	if k.seats > grpcSoakCapacity || use[1] > 1 || (use[1] > 0 && use[0] > 0) {
		k.sum.Violationf(k.t, "%d handlers run (capacity %d); repository %s: %d shared, %d exclusive", k.seats, grpcSoakCapacity, repo, use[0], use[1])
	}
}

func (k *grpcSoak) leave(repo string, excl bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seats--
	use := k.byRepo[repo]
	if excl {
		use[1]--
	} else {
		use[0]--
	}
	k.byRepo[repo] = use
}

// serve starts a server on a fresh loopback listener.
func (k *grpcSoak) serve(done *sync.WaitGroup) *grpc.Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		k.t.Fatal(err)
	}
	srv := k.server()
	done.Go(func() {
		if err := srv.Serve(ln); err != nil {
			k.sum.Violationf(k.t, "Serve: %v", err)
		}
	})
	a := ln.Addr().String()
	k.addr.Store(&a)
	return srv
}

func (k *grpcSoak) run(d time.Duration) time.Duration {
	start := time.Now()
	var serving, clients sync.WaitGroup
	k.stops.Handover(&k.sum, d, func() func() { return k.serve(&serving).GracefulStop }, func() {
		for i := range grpcSoakClients {
			clients.Go(func() { k.client(i) })
		}
	})
	k.stop.Store(true)
	clients.Wait()
	serving.Wait()
	if err := k.s.Close(context.Background()); err != nil {
		k.sum.Violationf(k.t, "Close: %v", err)
	}
	return time.Since(start)
}

// client is one client goroutine with its own connection, which it
// replaces when it hangs up on purpose or its server stopped.
func (k *grpcSoak) client(i int) {
	rng := rand.New(rand.NewPCG(k.seed, uint64(i)))
	var cc *grpc.ClientConn
	dial := func() {
		if cc != nil {
			cc.Close()
		}
		var err error
		if cc, err = grpc.NewClient(*k.addr.Load(), grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
			k.t.Error(err)
		}
	}
	dial()
	defer func() { cc.Close() }()
	addr := *k.addr.Load()
	for !k.stop.Load() {
		if a := *k.addr.Load(); a != addr { // a new server took over
			addr = a
			dial()
		}
		if k.call(rng, cc) {
			dial()
		}
	}
}

// call makes one call with random faults and checks its status. It reports
// whether it closed the connection (a client that vanishes mid-stream).
func (k *grpcSoak) call(rng *rand.Rand, cc *grpc.ClientConn) (hungUp bool) {
	k.started.Add(1)
	defer k.returned.Add(1)
	k.sum.Operations.Add(1)
	stops := k.stops.Seq()
	fault := false
	b := "ok"
	if n := rng.IntN(20); n < 6 {
		b = []string{"slow", "panic", "recover", "fail", "ok", "ok"}[n]
		fault = n < 4
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	switch rng.IntN(8) {
	case 0:
		ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(30_000))*time.Microsecond)
		fault = true
	case 1:
		ctx, cancel = context.WithCancel(ctx)
		tm := time.AfterFunc(time.Duration(rng.IntN(10_000))*time.Microsecond, cancel)
		defer tm.Stop()
		fault = true
	}
	defer cancel()
	repo := fmt.Sprintf("r%d", rng.IntN(8))
	md := metadata.Pairs("x-behave", b, "x-tenant-id", fmt.Sprintf("tenant-%d", rng.IntN(3)), "x-repo", repo)
	if rng.IntN(5) == 0 { // hostile metadata: a huge tenant, a spoofed chain, junk
		md.Set("x-tenant-id", strings.Repeat("t", 2000+rng.IntN(2000))) // (grpc-go refuses unprintable values on both ends)
		md.Set("x-forwarded-for", "1.2.3.4, garbage")
		for i := range 50 {
			md.Append("x-junk", fmt.Sprint(i))
		}
	}
	ctx = metadata.NewOutgoingContext(ctx, md)
	var err error
	method := ""
	switch n := rng.IntN(20); {
	case n < 8:
		method = cloneMethod
		err = cc.Invoke(ctx, cloneMethod, wrapperspb.String(repo), new(wrapperspb.StringValue))
	case n < 13:
		method = fetchMethod
		hangUp := rng.IntN(3) == 0
		hungUp = hangUp && rng.IntN(2) == 0
		fault = fault || hangUp
		err = k.fetch(ctx, cc, repo, hangUp, hungUp)
	case n < 17:
		method = pushMethod
		err = k.push(ctx, cc, rng.IntN(4))
	default:
		method = "/grpc.health.v1.Health/Check"
		_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	}
	if fault {
		k.sum.Faults.Add(1)
	}
	code := status.Code(err)
	k.mu.Lock()
	k.codes[code]++
	k.mu.Unlock()
	switch code {
	case codes.OK, codes.ResourceExhausted:
	case codes.Unavailable: // the scheduler's overload, or a server stopping
	case codes.Canceled, codes.DeadlineExceeded:
		if !fault {
			k.sum.Violationf(k.t, "%s: %v with no deadline or cancellation", method, err)
		}
	case codes.Internal, codes.Unknown: // recovered inside (Internal) or outside (recovery's default: Unknown)
		if b != "panic" && b != "recover" {
			k.sum.Violationf(k.t, "%s (%s): %v", method, b, err)
		}
	case codes.FailedPrecondition:
		if b != "fail" {
			k.sum.Violationf(k.t, "%s (%s): %v", method, b, err)
		}
	default:
		k.sum.Violationf(k.t, "%s (%s): unexpected status %v", method, b, err)
	}
	if code == codes.Unavailable && !strings.Contains(status.Convert(err).Message(), "admission:") &&
		!k.stops.Explains(stops) && !hungUp {
		k.sum.Violationf(k.t, "%s: transport failure with no server stopping: %v", method, err)
	}
	if code == codes.Unavailable && k.stops.Active() {
		time.Sleep(time.Millisecond) // no tight loop of refusals while a server stops
	}
	return hungUp
}

// fetch reads a server stream; with hangUp it stops after the first
// message, cancelling the call or (closeConn) closing the connection.
func (k *grpcSoak) fetch(ctx context.Context, cc *grpc.ClientConn, repo string, hangUp, closeConn bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cs, err := cc.NewStream(ctx, &gitDesc.Streams[0], fetchMethod)
	if err != nil {
		return err
	}
	if err := cs.SendMsg(wrapperspb.String(repo)); err != nil {
		return err
	}
	if err := cs.CloseSend(); err != nil {
		return err
	}
	for n := 0; ; n++ {
		if err := cs.RecvMsg(new(wrapperspb.StringValue)); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if hangUp && n == 0 {
			if closeConn {
				cc.Close()
			}
			cancel()
			return status.Error(codes.Canceled, "soak: the client hung up")
		}
	}
}

// push sends n messages on a bidirectional stream and reads the answer.
func (k *grpcSoak) push(ctx context.Context, cc *grpc.ClientConn, n int) error {
	cs, err := cc.NewStream(ctx, &gitDesc.Streams[1], pushMethod)
	if err != nil {
		return err
	}
	for range n {
		if err := cs.SendMsg(wrapperspb.String("obj")); err != nil {
			break // the server answered already; RecvMsg tells how
		}
	}
	if err := cs.CloseSend(); err != nil {
		return err
	}
	return cs.RecvMsg(new(wrapperspb.StringValue))
}

func (k *grpcSoak) check() {
	t := k.t
	if a, b := k.started.Load(), k.returned.Load(); a != b {
		k.sum.Lostf(t, "clients made %d calls, %d returned", a, b)
	}
	if a, b := k.entered.Load(), k.finished.Load(); a != b {
		k.sum.Lostf(t, "the server saw %d calls, settled %d", a, b)
	}
	snap := k.s.Snapshot()
	if snap.InUse != 0 || snap.Queued != 0 || k.seats != 0 {
		k.sum.Lostf(t, "after the stop: %d seats in use, %d queued, %d handlers counted running", snap.InUse, snap.Queued, k.seats)
	}
	c := snap.Counters
	if ended := c.Ended(); c.Submitted != ended {
		k.sum.Lostf(t, "counters: %d submitted, %d ended (%+v)", c.Submitted, ended, c)
	}
	k.mu.Lock()
	t.Logf("client statuses %v; server saw %d calls\ncounters %+v", k.codes, k.entered.Load(), c)
	k.mu.Unlock()
}
