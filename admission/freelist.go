package admission

// freeList keeps records that are no longer in use for reuse, up to max of
// them, so the steady state of the hot path allocates none. It takes no
// locks.
type freeList[T any] struct {
	s   []*T
	max int
}

// get returns a recycled record, or a new zero one.
func (l *freeList[T]) get() *T {
	n := len(l.s)
	if n == 0 {
		return new(T)
	}
	x := l.s[n-1]
	l.s[n-1] = nil
	l.s = l.s[:n-1]
	return x
}

// put keeps x for reuse if there is room; the caller must hold no other
// reference to it that could still be used.
func (l *freeList[T]) put(x *T) {
	if len(l.s) < l.max {
		l.s = append(l.s, x)
	}
}
