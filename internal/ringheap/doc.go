// Package ringheap holds the priority queues the admission scheduler orders
// its work with: [Heap], a 4-ary min-heap whose slots keep each element's
// sort key beside it, [Queue], a sorted ring in front of such a heap for
// elements that mostly arrive in order, and [Dense], a Queue laid out for
// many elements whose records are out of the cache.
//
// All three are generic over the element T (a pointer, in practice), its
// sort key K and its ordering O, an [Order]: a type of no size whose
// methods are the ordering, so that a queue carries no functions of its
// own and its zero value is ready to use (the scheduler keeps a queue in
// every flow, and a flow's record is two cache lines):
//
//   - Key(x) computes x's sort key. It is called when x is pushed or fixed
//     and the result is kept in x's slot, so ordering compares contiguous
//     memory and never dereferences an element it does not move.
//   - Less(a, b) orders two keys. It takes them by value: the keys are a
//     few words, passed in registers, and a key being placed need not be
//     stored anywhere to be compared.
//   - Index(x) returns where x stores its position (a Dense: its handle).
//     The structure owns that int while x is in it and sets it to -1 when
//     x leaves; the caller initialises it to -1. Knowing its position, an
//     element whose key changed is fixed, and an element anywhere removed,
//     without a search.
//
// As with container/heap, a caller changes an element and then calls Fix;
// ties must be broken by the key itself (a sequence number), so the order
// is total and reproducible.
//
// # Why keys live in the slots
//
// With 100,000 queued jobs over 10,000 keys, the elements are not in the
// cache: chasing every compared element, and writing the position of every
// moved one, were cache misses on every admission. Keeping the key in the
// slot leaves only the moved elements' positions to write; four children
// per node halve the depth of the heap, and so the moves.
//
// # Why a ring
//
// The scheduler's queues are mostly in order: a flow's jobs arrive in
// aging order, the flow just served goes to the back of its type's order
// when jobs cost alike, and promotions come a fixed interval apart. An
// element whose key is not less than the ring's last key joins the back of
// the ring in O(1) and touches no other element; only the rest pay a heap
// operation (see [Queue]). The flows are in order only while their jobs'
// seat times are alike: with many callers whose seat times vary, nearly
// every flow goes to the heap of a Dense (the admission package doc says
// why, and benchmarks/ADMISSION.md measured it).
//
// # Why Dense
//
// A Queue writes a moved element's position into the element, and its
// slots hold whole keys (40 bytes for the scheduler's flows, three or four
// cache lines for the four children of a node). With 10,000 flows, the
// flows and the lower levels of the heap are out of the cache, and each of
// those is a miss. A Dense keeps the elements with their keys, and their
// positions, in two arrays of its own, by a handle each element holds
// while it is in, and its slots hold the handle and an abbreviated key (as
// a database sorts on abbreviated keys, comparing the whole keys only
// where the abbreviations tie): four children take 64 bytes. The arrays
// cost memory, so a Dense is for the few large orderings, not for the many
// small ones.
//
// None of the types takes a lock: they are used under their owner's
// mutex, and are not safe for concurrent use. Verify checks every
// invariant written on them; tests call it after each operation.
package ringheap
