package peer

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// sema is golang.org/x/sync/semaphore.Weighted: FIFO, no keys.
type sema struct{ w *semaphore.Weighted }

func init() {
	register(Peer{
		Name: "semaphore",
		New: func(c Config) (Limiter, error) {
			return &sema{w: semaphore.NewWeighted(int64(c.Capacity))}, nil
		},
	})
}

func (l *sema) Do(ctx context.Context, _ string, fn func()) error {
	if err := l.w.Acquire(ctx, 1); err != nil {
		return err
	}
	defer l.w.Release(1)
	fn()
	return nil
}

func (l *sema) Close() error { return nil }
