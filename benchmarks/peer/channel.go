package peer

import "context"

// channel is the floor: a buffered channel of Capacity tokens, FIFO-ish
// (the runtime queues blocked senders in order), no keys.
type channel struct{ seats chan struct{} }

func init() {
	register(Peer{
		Name: "channel",
		New: func(c Config) (Limiter, error) {
			return &channel{seats: make(chan struct{}, c.Capacity)}, nil
		},
	})
}

func (l *channel) Do(ctx context.Context, _ string, fn func()) error {
	select {
	case l.seats <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-l.seats }()
	fn()
	return nil
}

func (l *channel) Close() error { return nil }
