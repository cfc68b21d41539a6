package httpmw

import (
	"context"
	"net/http"
	"net/netip"
	"slices"

	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/clientkey"
)

// criticality returns r's context carrying the level its caller stated,
// and that level, when the caller is trusted to state one and did so
// validly (see WithCriticalityTrust); otherwise r's context and Critical,
// having counted an ignored level. A level an outer middleware put in the
// context wins over the header.
func (c *config) criticality(r *http.Request) (context.Context, criticality.Level) {
	ctx := r.Context()
	vs := r.Header.Values(criticality.Header)
	if len(vs) == 0 {
		return ctx, criticality.Critical
	}
	return c.crit.Context(ctx, vs, func() bool { return c.critTrusted != nil && c.critTrusted(r) })
}

// PeerIn returns a predicate for WithCriticalityTrust: the immediate peer's
// address (r.RemoteAddr, never a forwarding header) is inside one of
// prefixes. With no prefixes it trusts nobody.
func PeerIn(prefixes ...netip.Prefix) func(*http.Request) bool {
	ps := clientkey.Prefixes(slices.Clone(prefixes))
	return func(r *http.Request) bool {
		a, ok := clientkey.ParseAddr(r.RemoteAddr)
		return ok && ps.Contains(a)
	}
}

// ClientCertIn returns a predicate for WithCriticalityTrust: the request's
// verified TLS client certificate names one of ids, each a SPIFFE ID
// ("spiffe://prod.example/frontend") or a subject distinguished name
// ("CN=frontend,O=example"), as ClientCert reads them. Without a verified
// certificate it is false.
func ClientCertIn(ids ...string) func(*http.Request) bool {
	set := clientkey.NewCertIDs(ids)
	return func(r *http.Request) bool {
		return r.TLS != nil && set.Has(r.TLS.VerifiedChains)
	}
}
