package throttle

import "time"

// buckets is the number of time buckets of a window.
const buckets = 60

// count is what one bucket counts.
type count struct {
	requests, accepts int64
}

// window counts requests and accepts over the last `buckets` buckets of
// width ns. Instants are Clock readings. It takes no locks.
type window struct {
	base time.Duration // instant of bucket index 0: the backend's first use
	cur  int64         // index of the newest bucket; ring[cur % buckets] is it
	// curEnd is where bucket cur ends, base + (cur+1)·width: an instant
	// before it is in the newest bucket, found without a division.
	curEnd time.Duration
	ring   [buckets]count
	// total is the sum of ring: the counts of the buckets cur-buckets+1
	// through cur (older ones were cleared when cur passed them).
	total count
}

// advance makes the bucket of now the newest, clearing the buckets skipped
// since the last call. A now before the newest bucket (a clock that went
// back) counts in the newest bucket.
func (w *window) advance(now, width time.Duration) {
	if now < w.curEnd {
		return // the usual case: still the newest bucket (or a clock that went back)
	}
	w.moveTo(now, width)
}

// moveTo is advance to a later bucket (apart, so that advance is inlined).
func (w *window) moveTo(now, width time.Duration) {
	idx := int64((now - w.base) / width)
	w.curEnd = w.base + time.Duration(idx+1)*width
	if idx-w.cur >= buckets {
		w.ring = [buckets]count{}
		w.total = count{}
	} else {
		for i := w.cur + 1; i <= idx; i++ {
			b := &w.ring[i%buckets]
			w.total.requests -= b.requests
			w.total.accepts -= b.accepts
			*b = count{}
		}
	}
	w.cur = idx
}

// add counts requests and accepts in the newest bucket.
func (w *window) add(requests, accepts int64) {
	b := &w.ring[w.cur%buckets]
	b.requests += requests
	b.accepts += accepts
	w.total.requests += requests
	w.total.accepts += accepts
}

// refusal is the probability of refusing the next request:
// max(0, (requests - k·accepts) / (requests + 1)).
func (w *window) refusal(k float64) float64 {
	r, a := float64(w.total.requests), float64(w.total.accepts)
	return max(0, (r-k*a)/(r+1))
}
