package freelist_test

import (
	"fmt"

	"github.com/fairseat/fairseat/internal/freelist"
)

type buffer struct{ b []byte }

// Records put back are reused: a loop that gets and puts one allocates
// only the first.
func Example() {
	made := 0
	l := freelist.New(16, func() *buffer { made++; return &buffer{b: make([]byte, 0, 64)} })
	for i := range 1000 {
		buf := l.Get()
		buf.b = append(buf.b[:0], byte(i))
		l.Put(buf)
	}
	fmt.Println(made, l.Len())
	// Output: 1 1
}
