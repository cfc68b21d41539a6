package httpmw

import (
	"net/http"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/internal/clientkey"
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
	return c
}
