package interceptors

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/clientkey"
)

// criticality returns the call's context carrying the level its caller
// stated, and that level, when the caller is trusted to state one and did
// so validly (see WithCriticalityTrust); otherwise ctx and Critical, having
// counted an ignored level. A level an earlier interceptor put in the
// context wins over the metadata.
func (c *config) criticality(ctx context.Context) (context.Context, criticality.Level) {
	vs := metadata.ValueFromIncomingContext(ctx, criticality.MetadataKey)
	if len(vs) == 0 {
		return ctx, criticality.Critical
	}
	return c.crit.Context(ctx, vs, func() bool { return c.critTrusted != nil && c.critTrusted(ctx) })
}

// levelStream is a server stream whose context carries the caller's level.
type levelStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *levelStream) Context() context.Context { return s.ctx }

// ClientCertIn returns a predicate for WithCriticalityTrust (or
// TrustedMetadata): the call's verified mTLS client certificate names one
// of ids, each a SPIFFE ID ("spiffe://prod.example/frontend") or a subject
// distinguished name ("CN=frontend,O=example"), as ClientCert reads them.
// Without a verified certificate it is false.
func ClientCertIn(ids ...string) func(ctx context.Context) bool {
	set := clientkey.NewCertIDs(ids)
	return func(ctx context.Context) bool {
		p, _ := peer.FromContext(ctx)
		return set.Has(verifiedChains(p))
	}
}
