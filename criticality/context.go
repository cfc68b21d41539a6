package criticality

import "context"

type contextKey struct{}

// NewContext returns a copy of ctx that carries level l: the level the
// client interceptors and transport send on calls made with it, and the
// level a server adapter found on the request. An invalid l is not stored:
// ctx is returned as it is. A nil ctx panics, as context.WithValue does.
func NewContext(ctx context.Context, l Level) context.Context {
	if ctx == nil {
		panic("criticality: NewContext: nil context")
	}
	if !l.Valid() {
		return ctx
	}
	return context.WithValue(ctx, contextKey{}, l)
}

// FromContext returns the level ctx carries and true, or Critical and false
// when it carries none (or ctx is nil).
func FromContext(ctx context.Context) (Level, bool) {
	if ctx == nil {
		return Critical, false
	}
	l, ok := ctx.Value(contextKey{}).(Level)
	return l, ok
}
