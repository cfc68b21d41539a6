package ringheap_test

import (
	"fmt"

	"github.com/fairseat/fairseat/internal/ringheap"
)

// task is an element: it carries its own sort key fields and the position
// the queue keeps in it.
type task struct {
	name string
	at   int // arrival, the sort key
	seq  int // breaks ties
	idx  int // owned by the queue; -1 when in none
}

type taskKey struct{ at, seq int }

// byArrival is the ordering of tasks: a type of no size whose methods say
// what a task's key is, how keys compare and where a task keeps its place.
type byArrival struct{}

func (byArrival) Key(t *task) taskKey { return taskKey{t.at, t.seq} }
func (byArrival) Index(t *task) *int  { return &t.idx }
func (byArrival) Less(a, b taskKey) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// A Queue of tasks ordered by arrival: in-order arrivals go to the ring, a
// late one to the heap beside it, and Fix moves a task whose key changed.
func ExampleQueue() {
	var q ringheap.Queue[taskKey, *task, byArrival]
	tasks := []*task{{name: "a", at: 1}, {name: "b", at: 2}, {name: "c", at: 4}, {name: "d", at: 3}}
	for i, t := range tasks {
		t.seq, t.idx = i, -1
		q.Push(t) // d sorts before c: it goes to the heap
	}
	tasks[0].at = 5 // a is retried: it now sorts last
	q.Fix(tasks[0])
	for q.Len() > 0 {
		t := q.Pop()
		fmt.Println(t.name, t.at)
	}
	// Output:
	// b 2
	// d 3
	// c 4
	// a 5
}

// A Heap keeps each element's key in its slot; Remove takes an element out
// from anywhere by the position stored in it.
func ExampleHeap() {
	var h ringheap.Heap[taskKey, *task, byArrival]
	tasks := []*task{{name: "a", at: 3}, {name: "b", at: 1}, {name: "c", at: 2}}
	for i, t := range tasks {
		t.seq, t.idx = i, -1
		h.Push(t)
	}
	h.Remove(tasks[2].idx) // c leaves from wherever it is
	fmt.Println(h.Pop().name, h.Pop().name, h.Len())
	// Output: b a 0
}

// byArrivalAbbreviated abbreviates a task's key to its arrival (>= 0),
// which orders as the keys do or ties.
type byArrivalAbbreviated struct{ byArrival }

func (byArrivalAbbreviated) Prefix(k taskKey) uint64 { return uint64(k.at) }

// A Dense orders the same tasks by an abbreviation of their keys, here the
// arrival alone: tasks that arrived at the same instant tie on it, and only
// then are their whole keys compared. The task stores its handle, not its
// position.
func ExampleDense() {
	var q ringheap.Dense[taskKey, *task, byArrivalAbbreviated]
	tasks := []*task{{name: "a", at: 2}, {name: "b", at: 1}, {name: "c", at: 2}, {name: "d", at: 1}}
	for i, t := range tasks {
		t.seq, t.idx = i, -1
		q.Push(t)
	}
	for q.Len() > 0 {
		fmt.Print(q.Pop().name, " ")
	}
	fmt.Println()
	// Output: b d a c
}
