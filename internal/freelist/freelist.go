package freelist

// List keeps up to a fixed number of records for reuse (see the package
// doc). The zero value keeps none (every Get allocates); build one with
// [New]. A List is not safe for concurrent use.
//
// Invariant: len(s) <= max, and no pointer in s is nil.
type List[T any] struct {
	s     []*T
	max   int
	alloc func() *T // makes a new record; nil = new(T)
}

// New returns a list that keeps up to max records. Get makes a new record
// with alloc when the list is empty, or with new(T) if alloc is nil (a
// record whose zero value is not ready to use, for instance one holding a
// queue built with its ordering functions, needs alloc).
func New[T any](max int, alloc func() *T) List[T] { return List[T]{max: max, alloc: alloc} }

// Get returns a kept record, or a new one.
func (l *List[T]) Get() *T {
	n := len(l.s)
	if n == 0 {
		if l.alloc != nil {
			return l.alloc()
		}
		return new(T)
	}
	x := l.s[n-1]
	l.s[n-1] = nil
	l.s = l.s[:n-1]
	return x
}

// Put keeps x for reuse if there is room. The caller must hold no other
// reference to x that could still be used, and x must not be nil.
func (l *List[T]) Put(x *T) {
	if len(l.s) < l.max {
		l.s = append(l.s, x)
	}
}

// Len is the number of records kept.
func (l *List[T]) Len() int { return len(l.s) }
