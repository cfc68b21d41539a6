package httpmw

import (
	"maps"
	"net/http"

	"go.opentelemetry.io/otel/metric"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/clientkey"
	"github.com/fairseat/fairseat/internal/critpolicy"
)

// An Option configures [Middleware]. Nil options are ignored.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config is fixed when Middleware is called and only read afterwards.
type config struct {
	key         KeyFunc
	maxKeyLen   int
	defaultType admission.JobType // "" = untagged routes pass through
	defaultID   JobIDFunc
	exempt      func(*http.Request) bool
	reject      RejectHandler
	critTrusted func(*http.Request) bool // nil: nobody may state a criticality
	critOffsets map[criticality.Level]admission.Priority
	meter       metric.MeterProvider
	crit        *critpolicy.Policy // built from the three above
}

// WithKeyFunc sets how a request's fairness key is derived. The default is
// FirstOf(ClientCert(), ClientIP(nil, clientkey.DefaultIPv6Prefix)).
func WithKeyFunc(f KeyFunc) Option {
	return optionFunc(func(c *config) { c.key = f })
}

// WithMaxKeyLen bounds fairness keys: longer keys are replaced by their
// source namespace and a SHA-256 digest. Values below 80 mean the default,
// 128 bytes.
func WithMaxKeyLen(n int) Option {
	return optionFunc(func(c *config) { c.maxKeyLen = n })
}

// WithDefaultJobType admits requests to routes without a Tag under job type
// t, with job IDs from id (nil: no job ID). Without this option such requests
// pass through without waiting. See the package doc for how tagged routes
// are recognised.
func WithDefaultJobType(t admission.JobType, id JobIDFunc) Option {
	return optionFunc(func(c *config) { c.defaultType, c.defaultID = t, id })
}

// WithExempt lets requests for which match returns true bypass admission:
// they never wait and take no seat, and are counted in the scheduler's
// Counters.Exempt. Use it for health checks and metrics scrapes.
func WithExempt(match func(*http.Request) bool) Option {
	return optionFunc(func(c *config) { c.exempt = match })
}

// WithRejectHandler replaces the writer of rejection responses.
func WithRejectHandler(h RejectHandler) Option {
	return optionFunc(func(c *config) { c.reject = h })
}

// WithCriticalityTrust sets which callers may state their criticality
// (header Fairseat-Criticality, package criticality): trusted reports
// whether the request comes from one (see PeerIn and ClientCertIn; combine
// them as you like). Without this option nobody may: a stated level is
// then ignored — the request is critical — and counted, as it is from any
// caller trusted does not accept. Never an error to the caller.
func WithCriticalityTrust(trusted func(*http.Request) bool) Option {
	return optionFunc(func(c *config) { c.critTrusted = trusted })
}

// WithCriticalityOffsets sets the priority offset of each criticality
// level: how far a request of that level moves from its route's type's
// priority (admission.Request.PriorityOffset, clamped into the type's
// tier). Levels the map leaves out keep their default: sheddable -2,
// sheddable_plus -1, critical 0, critical_plus +1. A key that is not a
// level makes Middleware panic.
func WithCriticalityOffsets(offsets map[criticality.Level]admission.Priority) Option {
	return optionFunc(func(c *config) { c.critOffsets = maps.Clone(offsets) })
}

// A CommonOption configures both Middleware and Transport.
type CommonOption interface {
	Option
	TransportOption
}

type meterOption struct{ mp metric.MeterProvider }

func (m meterOption) apply(c *config)                   { c.meter = m.mp }
func (m meterOption) applyTransport(o *transportConfig) { o.meter = m.mp }

// WithMeterProvider sets the OpenTelemetry meter provider of the package's
// own instruments, the middleware's (fairseat.criticality.ignored) or the
// transport's (fairseat.client.*), scope ScopeName; the scheduler has its
// own. The default is the global one.
func WithMeterProvider(mp metric.MeterProvider) CommonOption {
	return meterOption{mp}
}

// ScopeName is the OpenTelemetry instrumentation scope of the package's
// instruments.
const ScopeName = "github.com/fairseat/fairseat/httpmw"

func buildConfig(opts []Option) *config {
	c := &config{maxKeyLen: clientkey.DefaultMaxLen, reject: WriteRejection}
	for _, o := range opts {
		if o != nil {
			o.apply(c)
		}
	}
	if c.key == nil {
		c.key = FirstOf(ClientCert(), ClientIP(nil, clientkey.DefaultIPv6Prefix))
	}
	if c.reject == nil {
		c.reject = WriteRejection
	}
	crit, err := critpolicy.New(c.meter, ScopeName, c.critOffsets)
	if err != nil {
		panic("httpmw: WithCriticalityOffsets: " + err.Error())
	}
	c.crit = crit
	return c
}
