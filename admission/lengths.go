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
// Among the keys of the longest queue, longest returns the one that
// reached that length last: its newest entry is at the end of the bucket.
//
// Invariants: every key with queued > 0 has lenQ == queued and exactly one
// live entry (stamp == key.lenStamp), in bucket lenQ; a key with queued == 0
// has lenQ == 0 and lenStamp == 0; buckets[q].n is the number of live
// entries in bucket q; max is the largest q with buckets[q].n > 0, or 0.
// Dead entries are dropped when they reach the end of the longest bucket,
// and a bucket is compacted when it holds more than twice its live
// entries (plus a few), so the memory is O(keys with queued jobs + buckets)
// and each entry is dropped once: O(1) amortized per change.
type queueLengths struct {
	buckets []lenBucket // by queued count; buckets[0] is unused
	max     int
	keys    int    // keys with queued jobs
	stamp   uint64 // the last stamp handed out
}

type lenBucket struct {
	n       int // live entries: keys whose queued count is the bucket's
	entries []lenEntry
}

type lenEntry struct {
	k     *keyState
	stamp uint64
}

func (e *lenEntry) live() bool { return e.k.lenStamp == e.stamp }

// update records that k.queued changed.
func (q *queueLengths) update(k *keyState) {
	old, cur := k.lenQ, k.queued
	if old == cur {
		return
	}
	switch {
	case old == 0:
		q.keys++
	case cur == 0:
		q.keys--
	}
	if old > 0 {
		q.buckets[old].n--
	}
	k.lenQ = cur
	k.lenStamp = 0
	if cur > 0 {
		for len(q.buckets) <= cur {
			q.buckets = append(q.buckets, lenBucket{})
		}
		b := &q.buckets[cur]
		if len(b.entries) >= 2*b.n+8 {
			b.compact()
		}
		b.n++
		q.stamp++
		k.lenStamp = q.stamp
		b.entries = append(b.entries, lenEntry{k, q.stamp})
		q.max = max(q.max, cur)
	}
	for q.max > 0 && q.buckets[q.max].n == 0 {
		q.max--
	}
}

// compact drops b's dead entries, keeping the order of the live ones.
func (b *lenBucket) compact() {
	live := b.entries[:0]
	for _, e := range b.entries {
		if e.live() {
			live = append(live, e)
		}
	}
	clear(b.entries[len(live):])
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
		if e := b.entries[last]; e.live() {
			return e.k
		}
		b.entries[last] = lenEntry{}
		b.entries = b.entries[:last]
	}
}

// each calls fn for every key with queued jobs, longest first.
func (q *queueLengths) each(fn func(*keyState)) {
	for c := q.max; c > 0; c-- {
		for _, e := range q.buckets[c].entries {
			if e.live() {
				fn(e.k)
			}
		}
	}
}

// len is the number of keys with queued jobs.
func (q *queueLengths) len() int { return q.keys }
