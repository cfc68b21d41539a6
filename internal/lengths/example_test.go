package lengths_test

import (
	"fmt"

	"github.com/fairseat/fairseat/internal/lengths"
)

// client is an element: its queue length and the handle the Buckets keep
// in it.
type client struct {
	name   string
	queued int
	h      lengths.Handle
}

// Longest is the client with the most queued, the one that reached that
// length last when several tie.
func Example() {
	var b lengths.Buckets[*client]
	a, c := &client{name: "a"}, &client{name: "c"}
	arrive := func(x *client) {
		x.queued++
		b.Set(&x.h, x, x.queued)
	}
	arrive(a)
	arrive(a)
	arrive(c)
	fmt.Println(b.Longest().name, b.Len())
	arrive(c) // c ties with a, and got there last
	fmt.Println(b.Longest().name)
	for _, x := range []*client{a, a, c, c} { // everything leaves
		x.queued--
		b.Set(&x.h, x, x.queued)
	}
	fmt.Println(b.Longest() == nil, b.Len())
	// Output:
	// a 2
	// c
	// true 0
}
