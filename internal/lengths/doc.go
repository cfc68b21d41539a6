// Package lengths finds, among many elements that each have a count, one
// with the greatest count, in O(1) per change and per query, touching no
// element but the one that changed.
//
// The admission scheduler uses it for fair push-out: when its queue is
// full, the fairness key with the most queued jobs gives one up, so it
// must know that key at every arrival, while the queued counts of
// thousands of keys move by one at every admission and arrival.
//
// # Buckets and stamps
//
// Elements are kept in buckets by count. An element whose count changes
// gets a new stamp and an entry at the end of its new bucket; its entry in
// the old bucket is not searched for and unlinked, it is simply dead from
// then on (its stamp is no longer the element's). So a change costs an
// append to one bucket. (A heap of elements ordered by count would move a
// changed element across all the elements tied with it.) Among the
// elements of the greatest count, the one that reached it last is at the
// end of its bucket, and [Buckets.Longest] returns it.
//
// # Slots: a dense array, not the elements' records
//
// An element with a count above zero holds a slot, a small integer, while
// it has one: stamps[slot] is the stamp of its live entry and owners[slot]
// the element. An entry names the slot, not the element, so telling a dead
// entry from a live one reads the dense stamps array and never an
// element's record: compacting a bucket of 10,000 entries reads 80 KB in
// order rather than 10,000 records spread over the heap, which were two
// cache misses per admission when the scheduler's keys outgrew the cache.
// Stamps are never reused, so an entry left behind by a slot's earlier
// holder is dead for its new one too.
//
// # What an element keeps: a Handle
//
// The caller keeps a [Handle] in each element's record (8 bytes) and
// passes it with the element at every change: it holds the count the
// structure last recorded (to find the old bucket) and the element's slot.
// That is the whole interface between the structure and the element: it
// never reads the element's record, and the element never reads the
// structure's arrays.
//
// A [Buckets] takes no lock: it is used under its owner's mutex and is not
// safe for concurrent use.
package lengths
