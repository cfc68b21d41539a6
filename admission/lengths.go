package admission

// queueLengths finds a fairness key with the most queued jobs, which fair
// push-out (DESIGN §5) takes its victim from. It takes no locks.
//
// Keys are kept in buckets by queued count. A key whose count changes gets
// a new stamp and an entry in its new bucket; its entry in the old bucket
// is not searched for and unlinked, it is simply dead from then on (its
// stamp is no longer the key's). So a change costs an append to one bucket
// and touches no other key: with 10,000 keys whose counts move by one on
// every admission and arrival, this is what keeps the bookkeeping of
// push-out from growing with the number of keys. (A heap of keys, ordered
// by count, moved each of those keys across all the keys tied with it.)
//
// A key with queued jobs holds a slot, a small integer, while it has them:
// stamps[slot] is the stamp of its live entry and owners[slot] the key. An
// entry names the slot, not the key, so telling a dead entry from a live
// one reads the dense stamps array and never a key's record: compacting a
// bucket of 10,000 keys reads 80 KB in order rather than 10,000 records
// spread over the heap, which were two cache misses per admission when the
// keys outgrew the cache. Stamps are never reused, so an entry left behind
// by a slot's earlier holder is dead for its new one too.
//
// Among the keys of the longest queue, longest returns the one that
// reached that length last: its newest entry is at the end of the bucket.
//
// Invariants: every key with queued > 0 has lenQ == queued, holds slot
// lenSlot-1 (owners[lenSlot-1] == key) and has exactly one live entry
// (stamp == stamps[slot]), in bucket lenQ; a key with queued == 0 has lenQ
// == 0 and lenSlot == 0; free lists the slots nobody holds, whose stamps
// are 0 and owners nil; buckets[q].n is the number of live entries in
// bucket q; max is the largest q with buckets[q].n > 0, or 0. Dead entries
// are dropped when they reach the end of the longest bucket, and a bucket
// is compacted when it holds more than twice its live entries (plus a
// few), so the memory is O(keys with queued jobs + buckets) and each entry
// is dropped once: O(1) amortized per change.
type queueLengths struct {
	buckets []lenBucket // by queued count; buckets[0] is unused
	max     int
	stamp   uint64 // the last stamp handed out

	stamps []uint64    // by slot: the stamp of the holder's live entry; 0 = free
	owners []*keyState // by slot: the holder, or nil
	free   []int32     // slots nobody holds
}

type lenBucket struct {
	n       int // live entries: keys whose queued count is the bucket's
	entries []lenEntry
}

type lenEntry struct {
	stamp uint64
	slot  int32
}

func (q *queueLengths) live(e lenEntry) bool { return q.stamps[e.slot] == e.stamp }

// update records that k.queued changed.
func (q *queueLengths) update(k *keyState) {
	old, cur := k.lenQ, k.queued
	if old == cur {
		return
	}
	if old > 0 {
		q.buckets[old].n--
	}
	k.lenQ = cur
	if cur == 0 {
		q.release(k)
	} else {
		if old == 0 {
			q.hold(k)
		}
		for len(q.buckets) <= cur {
			q.buckets = append(q.buckets, lenBucket{})
		}
		b := &q.buckets[cur]
		if len(b.entries) >= 2*b.n+8 {
			q.compact(b)
		}
		b.n++
		q.stamp++
		slot := k.lenSlot - 1
		q.stamps[slot] = q.stamp
		b.entries = append(b.entries, lenEntry{q.stamp, slot})
		q.max = max(q.max, cur)
	}
	for q.max > 0 && q.buckets[q.max].n == 0 {
		q.max--
	}
}

// hold gives k, which has just got queued jobs, a slot.
func (q *queueLengths) hold(k *keyState) {
	var slot int32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		slot = int32(len(q.stamps))
		q.stamps = append(q.stamps, 0)
		q.owners = append(q.owners, nil)
	}
	q.owners[slot] = k
	k.lenSlot = slot + 1
}

// release frees the slot of k, which has no queued jobs left: its entry
// is dead from now on.
func (q *queueLengths) release(k *keyState) {
	slot := k.lenSlot - 1
	q.stamps[slot], q.owners[slot] = 0, nil
	q.free = append(q.free, slot)
	k.lenSlot = 0
}

// compact drops b's dead entries, keeping the order of the live ones.
func (q *queueLengths) compact(b *lenBucket) {
	live := b.entries[:0]
	for _, e := range b.entries {
		if q.live(e) {
			live = append(live, e)
		}
	}
	b.entries = live
}

// longest returns the key with the most queued jobs that reached that
// count last, or nil when no key has a queued job.
func (q *queueLengths) longest() *keyState {
	if q.max == 0 {
		return nil
	}
	b := &q.buckets[q.max]
	for {
		last := len(b.entries) - 1
		if e := b.entries[last]; q.live(e) {
			return q.owners[e.slot]
		}
		b.entries = b.entries[:last]
	}
}

// each calls fn for every key with queued jobs, longest first.
func (q *queueLengths) each(fn func(*keyState)) {
	for c := q.max; c > 0; c-- {
		for _, e := range q.buckets[c].entries {
			if q.live(e) {
				fn(q.owners[e.slot])
			}
		}
	}
}

// len is the number of keys with queued jobs.
func (q *queueLengths) len() int { return len(q.stamps) - len(q.free) }
