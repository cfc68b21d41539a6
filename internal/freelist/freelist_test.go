package freelist

import "testing"

type rec struct{ n int }

// TestListReusesUpToMax: records put back come out again, last first; no
// more than max are kept; an empty list makes new records with alloc.
func TestListReusesUpToMax(t *testing.T) {
	made := 0
	l := New(2, func() *rec { made++; return &rec{n: -1} })
	a, b, c := l.Get(), l.Get(), l.Get()
	if made != 3 || a.n != -1 || a == b || b == c {
		t.Fatalf("empty list: made %d records (want 3, distinct, from alloc)", made)
	}
	l.Put(a)
	l.Put(b)
	l.Put(c) // no room: dropped
	if l.Len() != 2 {
		t.Fatalf("kept %d records, want 2", l.Len())
	}
	if x, y := l.Get(), l.Get(); x != b || y != a {
		t.Fatalf("Get returned %p, %p; want b %p then a %p", x, y, b, a)
	}
	if l.Get() == c || made != 4 {
		t.Fatalf("the record put without room came back, or alloc not called (made %d)", made)
	}
}

// TestZeroListAllocates: the zero List keeps nothing and allocates zero
// records.
func TestZeroListAllocates(t *testing.T) {
	var l List[rec]
	x := l.Get()
	x.n = 5
	l.Put(x)
	if y := l.Get(); y == x || y.n != 0 || l.Len() != 0 {
		t.Fatalf("zero list kept a record (got %+v, len %d)", y, l.Len())
	}
}
