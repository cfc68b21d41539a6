package interceptors_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/netip"
	"net/url"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/interceptors"
)

// The test service, written by hand in the shape protoc-gen-go-grpc
// generates (there is no proto compiler here): git.v1.Git with a unary
// Clone, a server-streaming Fetch and a bidirectional Push, all on
// google.protobuf.StringValue, whose field "value" names the repository.
// A second service, other.v1.Other, has a unary Ping.
const (
	cloneMethod = "/git.v1.Git/Clone"
	fetchMethod = "/git.v1.Git/Fetch"
	pushMethod  = "/git.v1.Git/Push"
	pingMethod  = "/other.v1.Other/Ping"
)

// gitServer is the service implementation: each method calls the test's
// function, so a test decides what a handler does (block on a channel,
// record that it ran).
type gitServer struct {
	clone func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error)
	fetch func(req *wrapperspb.StringValue, ss grpc.ServerStream) error
	push  func(ss grpc.ServerStream) error
}

var gitDesc = grpc.ServiceDesc{
	ServiceName: "git.v1.Git",
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Clone", Handler: cloneHandler}},
	Streams: []grpc.StreamDesc{
		{StreamName: "Fetch", Handler: fetchHandler, ServerStreams: true},
		{StreamName: "Push", Handler: pushHandler, ServerStreams: true, ClientStreams: true},
	},
}

var otherDesc = grpc.ServiceDesc{
	ServiceName: "other.v1.Other",
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Ping", Handler: pingHandler}},
}

func unaryHandler(method string, impl func(srv any, ctx context.Context, req *wrapperspb.StringValue) (any, error)) func(any, context.Context, func(any) error, grpc.UnaryServerInterceptor) (any, error) {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		if interceptor == nil {
			return impl(srv, ctx, in)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: method}
		return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
			return impl(srv, ctx, req.(*wrapperspb.StringValue))
		})
	}
}

var cloneHandler = unaryHandler(cloneMethod, func(srv any, ctx context.Context, req *wrapperspb.StringValue) (any, error) {
	s := srv.(*gitServer)
	if s.clone == nil {
		return wrapperspb.String("cloned " + req.GetValue()), nil
	}
	return s.clone(ctx, req)
})

var pingHandler = unaryHandler(pingMethod, func(_ any, _ context.Context, req *wrapperspb.StringValue) (any, error) {
	return wrapperspb.String("pong"), nil
})

// fetchHandler receives the request first, as generated server-streaming
// handlers do, so a FirstMessage route admits it there.
func fetchHandler(srv any, ss grpc.ServerStream) error {
	in := new(wrapperspb.StringValue)
	if err := ss.RecvMsg(in); err != nil {
		return err
	}
	s := srv.(*gitServer)
	if s.fetch == nil {
		return ss.SendMsg(wrapperspb.String("fetched " + in.GetValue()))
	}
	return s.fetch(in, ss)
}

func pushHandler(srv any, ss grpc.ServerStream) error {
	return srv.(*gitServer).push(ss)
}

// env is a gRPC server behind the interceptors and its clients, all over
// bufconn, so that it runs inside a synctest bubble.
type env struct {
	t       *testing.T
	sched   *admission.Scheduler
	git     *gitServer
	srv     *grpc.Server
	srvTLS  *tls.Config // nil: insecure
	ca      *testCA
	serving sync.WaitGroup
}

type envConfig struct {
	sched   admission.Config
	types   map[admission.JobType]admission.JobTypeConfig
	opts    []interceptors.Option
	outer   []grpc.UnaryServerInterceptor                                 // run before ours
	outerS  []grpc.StreamServerInterceptor                                // run before ours
	wrap    func(grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor // wraps ours (selector)
	mtls    bool
	noClose bool // the test closes the scheduler itself
}

// newEnv starts a server with the interceptors and the scheduler described
// by cfg. Everything is stopped by t.Cleanup.
func newEnv(t *testing.T, cfg envConfig) *env {
	t.Helper()
	if cfg.sched.Capacity == 0 {
		cfg.sched.Capacity = 1
	}
	s, err := admission.New(cfg.sched)
	if err != nil {
		t.Fatal(err)
	}
	for typ, c := range cfg.types {
		if err := s.RegisterType(typ, c); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{t: t, sched: s, git: &gitServer{}}
	var sopts []grpc.ServerOption
	if cfg.mtls {
		e.ca = newTestCA(t)
		e.srvTLS = e.ca.serverConfig(t)
		sopts = append(sopts, grpc.Creds(credentials.NewTLS(e.srvTLS)))
	}
	ours := interceptors.UnaryServerInterceptor(s, cfg.opts...)
	if cfg.wrap != nil {
		ours = cfg.wrap(ours)
	}
	sopts = append(sopts,
		grpc.ChainUnaryInterceptor(append(cfg.outer, ours)...),
		grpc.ChainStreamInterceptor(append(cfg.outerS, interceptors.StreamServerInterceptor(s, cfg.opts...))...),
	)
	e.srv = grpc.NewServer(sopts...)
	e.srv.RegisterService(&gitDesc, e.git)
	e.srv.RegisterService(&otherDesc, e.git)
	healthpb.RegisterHealthServer(e.srv, health.NewServer())
	t.Cleanup(func() {
		e.srv.Stop()
		e.serving.Wait()
		if !cfg.noClose {
			if err := s.Close(context.Background()); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
	})
	return e
}

// client connects to the server as a client whose connection the server
// sees coming from remote ("203.0.113.7:5000"; "" for bufconn's own address,
// which is no IP address). cert is its mTLS certificate, if any.
func (e *env) client(remote string, cert *tls.Certificate, extra ...grpc.DialOption) *grpc.ClientConn {
	e.t.Helper()
	lis := bufconn.Listen(1 << 16)
	var l net.Listener = lis
	if remote != "" {
		ap := netip.MustParseAddrPort(remote)
		l = fixedAddrListener{lis, net.TCPAddrFromAddrPort(ap)}
	}
	e.serving.Add(1)
	go func() {
		defer e.serving.Done()
		_ = e.srv.Serve(l) // returns when the server stops
	}()
	creds := insecure.NewCredentials()
	if e.ca != nil {
		creds = credentials.NewTLS(e.ca.clientConfig(cert))
	}
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithIdleTimeout(0), // fake time jumps hours; never let the channel go idle
	}, extra...)
	cc, err := grpc.NewClient("passthrough:///bufnet", opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cc.Close() })
	return cc
}

// fixedAddrListener makes the server see every connection it accepts as
// coming from remote.
type fixedAddrListener struct {
	*bufconn.Listener
	remote net.Addr
}

func (l fixedAddrListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return addrConn{c, l.remote}, nil
}

type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

// clone calls Clone for repo.
func clone(ctx context.Context, cc *grpc.ClientConn, repo string, opts ...grpc.CallOption) error {
	return cc.Invoke(ctx, cloneMethod, wrapperspb.String(repo), new(wrapperspb.StringValue), opts...)
}

// result is the outcome of a call started in the background.
type result struct {
	name string
	err  error
}

// gate lets a test hold handlers inside the server: each handler that calls
// enter reports its name on entered and blocks until the test sends on its
// release channel.
type gate struct {
	entered chan string
	mu      sync.Mutex
	release map[string]chan struct{}
}

func newGate() *gate {
	return &gate{entered: make(chan string, 100), release: make(map[string]chan struct{})}
}

func (g *gate) ch(name string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.release[name]
	if !ok {
		c = make(chan struct{})
		g.release[name] = c
	}
	return c
}

func (g *gate) enter(ctx context.Context, name string) error {
	g.entered <- name
	select {
	case <-g.ch(name):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) open(name string) { close(g.ch(name)) }

// drain returns the names that entered since the last call, in order.
func (g *gate) drain() []string {
	var names []string
	for {
		select {
		case n := <-g.entered:
			names = append(names, n)
		default:
			return names
		}
	}
}

// testCA issues the certificates of an mTLS test: a CA, the server's
// certificate for "bufnet", and client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

// Certificates must be valid at synctest's fake epoch (2000-01-01) and now.
var (
	notBefore = time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)
	notAfter  = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "fairseat test CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

var serial = struct {
	sync.Mutex
	n int64
}{n: 1}

// issue returns a certificate signed by the CA for subject, with the given
// URI SANs (a SPIFFE ID) and DNS names.
func (ca *testCA) issue(t testing.TB, subject pkix.Name, uris []string, dns []string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial.Lock()
	serial.n++
	sn := serial.n
	serial.Unlock()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(sn),
		Subject:      subject,
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		DNSNames:     dns,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func (ca *testCA) serverConfig(t testing.TB) *tls.Config {
	cert := ca.issue(t, pkix.Name{CommonName: "bufnet"}, nil, []string{"bufnet"}, x509.ExtKeyUsageServerAuth)
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    ca.pool,
		ClientAuth:   tls.VerifyClientCertIfGiven,
		MinVersion:   tls.VersionTLS13,
	}
}

func (ca *testCA) clientConfig(cert *tls.Certificate) *tls.Config {
	c := &tls.Config{RootCAs: ca.pool, ServerName: "bufnet", MinVersion: tls.VersionTLS13}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

func (ca *testCA) spiffeCert(t testing.TB, id string) tls.Certificate {
	return ca.issue(t, pkix.Name{CommonName: "workload"}, []string{id}, nil, x509.ExtKeyUsageClientAuth)
}

func (ca *testCA) subjectCert(t testing.TB, cn string) tls.Certificate {
	return ca.issue(t, pkix.Name{CommonName: cn, Organization: []string{"fairseat"}}, nil, nil, x509.ExtKeyUsageClientAuth)
}
