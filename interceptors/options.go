package interceptors

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/metric"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/critpolicy"
)

// An Option configures the interceptors. Nil options are ignored; when an
// option is given twice the last one wins, except WithRoutes, whose tables
// are merged.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	routes      Routes
	fallback    *Route
	key         KeyFunc
	maxKeyLen   int
	exempt      func(ctx context.Context, fullMethod string) bool
	status      StatusFunc
	critTrusted func(ctx context.Context) bool
	critOffsets map[criticality.Level]admission.Priority
	meter       metric.MeterProvider
}

// WithRoutes adds routes: which methods wait for a seat, under which job
// type, with which job ID. Methods without a route pass through unless
// WithDefaultRoute is set. Malformed patterns make the interceptor
// constructors panic.
func WithRoutes(rs Routes) Option {
	return optionFunc(func(o *options) {
		if o.routes == nil {
			o.routes = make(Routes, len(rs))
		}
		maps.Copy(o.routes, rs)
	})
}

// WithDefaultRoute admits calls to methods that have no route as r says.
// Without it such calls pass through without waiting.
func WithDefaultRoute(r Route) Option {
	return optionFunc(func(o *options) { o.fallback = &r })
}

// WithKeyFunc sets how a call's fairness key is derived. The default is
// FirstOf(ClientCert(), ClientIP(64)): the mTLS client's SPIFFE ID or
// certificate subject, else its IP address.
func WithKeyFunc(f KeyFunc) Option {
	return optionFunc(func(o *options) { o.key = f })
}

// WithMaxKeyLen bounds fairness keys: longer keys are replaced by their
// source namespace and a SHA-256 digest. Values below 80 mean the default,
// 128 bytes.
func WithMaxKeyLen(n int) Option {
	return optionFunc(func(o *options) { o.maxKeyLen = n })
}

// WithExempt lets calls for which match returns true bypass admission:
// they never wait and take no seat, and each is counted in the scheduler's
// Counters.Exempt (Scheduler.CountExempt). Health checks
// (/grpc.health.v1.Health/*) are exempt whether or not match says so. See
// MatchMethods.
func WithExempt(match func(ctx context.Context, fullMethod string) bool) Option {
	return optionFunc(func(o *options) { o.exempt = match })
}

// WithStatusFunc replaces DefaultStatus, the mapping from admission errors
// to the status the client gets.
func WithStatusFunc(f StatusFunc) Option {
	return optionFunc(func(o *options) { o.status = f })
}

// WithCriticalityTrust sets which callers may state their criticality
// (metadata fairseat-criticality, package criticality): trusted reports
// whether the call comes from one, from its context (see PeerIn and
// ClientCertIn; combine them as you like). Without this option nobody
// may: a stated level is then ignored — the call is critical — and counted,
// as it is from any caller trusted does not accept. Never an error to the
// caller.
func WithCriticalityTrust(trusted func(ctx context.Context) bool) Option {
	return optionFunc(func(o *options) { o.critTrusted = trusted })
}

// WithCriticalityOffsets sets the priority offset of each criticality
// level: how far a call of that level moves from its route's type's
// priority (admission.Request.PriorityOffset, clamped into the type's
// tier). Levels the map leaves out keep their default: sheddable -2,
// sheddable_plus -1, critical 0, critical_plus +1. A key that is not a
// level makes the interceptor constructors panic.
func WithCriticalityOffsets(offsets map[criticality.Level]admission.Priority) Option {
	return optionFunc(func(o *options) { o.critOffsets = maps.Clone(offsets) })
}

// A CommonOption configures both the server and the client interceptors.
type CommonOption interface {
	Option
	ClientOption
}

type meterOption struct{ mp metric.MeterProvider }

func (m meterOption) apply(o *options)             { o.meter = m.mp }
func (m meterOption) applyClient(o *clientOptions) { o.meter = m.mp }

// WithMeterProvider sets the OpenTelemetry meter provider of the
// interceptors' own instruments, server (fairseat.criticality.ignored) or
// client (fairseat.client.*), scope ScopeName; the scheduler has its own.
// The default is the global one.
func WithMeterProvider(mp metric.MeterProvider) CommonOption {
	return meterOption{mp}
}

// ScopeName is the OpenTelemetry instrumentation scope of the interceptors'
// instruments.
const ScopeName = "github.com/fairseat/fairseat/interceptors"

// config is built once per interceptor and only read afterwards, so the
// interceptors are safe for concurrent use.
type config struct {
	sched       *admission.Scheduler
	routes      routeTable
	key         KeyFunc
	maxKeyLen   int
	exempt      func(ctx context.Context, fullMethod string) bool // nil: only health checks
	status      StatusFunc
	critTrusted func(ctx context.Context) bool // nil: nobody may state a criticality
	crit        *critpolicy.Policy
}

func newConfig(s *admission.Scheduler, opts []Option) *config {
	if s == nil {
		panic("interceptors: nil *admission.Scheduler")
	}
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	crit, err := critpolicy.New(o.meter, ScopeName, o.critOffsets)
	if err != nil {
		panic("interceptors: WithCriticalityOffsets: " + err.Error())
	}
	c := &config{
		sched:       s,
		routes:      compileRoutes(o.routes, o.fallback),
		key:         o.key,
		maxKeyLen:   o.maxKeyLen,
		exempt:      o.exempt,
		status:      o.status,
		critTrusted: o.critTrusted,
		crit:        crit,
	}
	if c.key == nil {
		c.key = defaultKey() // FirstOf(ClientCert(), ClientIP(64)), fused
	}
	if c.status == nil {
		c.status = DefaultStatus
	}
	return c
}
