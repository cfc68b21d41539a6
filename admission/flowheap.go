package admission

import (
	"math"

	"github.com/fairseat/fairseat/internal/ringheap"
)

// sortKey is a flow's place in the dispatch order at its last sync (see
// lessKey): the head's rank, its key's MinSeats status and virtual time, and
// the head's age and sequence.
//
// It also holds the head itself, which does not order anything. The type's
// flowQueue keeps the key by handle beside the flow, so dispatch reads the
// head's record there, without waiting first for the flow's record and then
// its queue's ring. With thousands of keys none of those is in the cache.
// This is a copy of what the flow's queue holds, so the house rule for
// shortcuts applies. It stays because it won at least 5 % at 10,000 keys:
// BenchmarkKeys/keys=10000 in interleaved rounds was 5.1 % faster (p<0.001,
// 16 rounds), with no significant change at 10 keys; session 11's four
// runs had measured −6.9, −10.5, −1.8 (n.s.) and −4.5 % (benchmarks/
// ADMISSION.md, session 13).
type sortKey struct {
	v        float64 // key.v
	headAt   int64   // head's aging start, Unix nanoseconds
	headSeq  uint64  // head's seq
	eff      Priority
	urgent   bool
	belowMin bool
	head     *job // the head, as above; nil in a key built only to compare (resource.go)
}

// lessKey is the dispatch order of two flows' heads: urgent first (oldest
// first), then effective priority, then keys below MinSeats, then virtual
// time, then age.
func lessKey(a, b *sortKey) bool {
	if a.urgent != b.urgent {
		return a.urgent
	}
	if !a.urgent {
		if a.eff != b.eff {
			return a.eff > b.eff
		}
		if a.belowMin != b.belowMin {
			return a.belowMin
		}
		if a.v != b.v {
			return a.v < b.v
		}
	}
	if a.headAt != b.headAt {
		return a.headAt < b.headAt
	}
	return a.headSeq < b.headSeq
}

// flowSortKey is f's sort key as of now: the rank syncFlowLocked stored in
// f, its key's virtual time and MinSeats status, its head's age, and the
// head.
func flowSortKey(f *flow) sortKey {
	hk, h := f.jobs.Peek()
	return sortKey{v: f.key.v, headAt: f.agingAt(hk, h), headSeq: hk.seq, eff: f.eff, urgent: f.urgent, belowMin: f.key.belowMin(), head: h}
}

// headAgingAt is the aging start of f's best job (see agingAt).
func (f *flow) headAgingAt() int64 { return f.agingAt(f.jobs.Peek()) }

// agingAt is the aging start of h, f's best job, whose order key in the
// flow's queue is hk: read from hk, so that ordering flows reads no job
// record; only a ShortestFirst key is shifted by the job's cost, and then
// it comes from the job.
func (f *flow) agingAt(hk *jobKey, h *job) int64 {
	if f.typ.smithA > 0 {
		return h.agingAt
	}
	return hk.at
}

// flowQueue is a type's ready flows in dispatch order. It is a
// ringheap.Dense, not a Queue: with thousands of active keys the flows'
// records are not in the cache, and a Dense moves flows without writing
// into them and compares 16-byte slots, four to a cache line (see
// flowPrefix). Each flow in it keeps its handle in typIdx.
type flowQueue = ringheap.Dense[sortKey, *flow, flowOrder]

// flowOrder is the dispatch order of a type's flows (a ringheap.DenseOrder).
type flowOrder struct{}

func (flowOrder) Key(f *flow) sortKey     { return flowSortKey(f) }
func (flowOrder) Less(a, b sortKey) bool  { return lessKey(&a, &b) }
func (flowOrder) Index(f *flow) *int      { return &f.typIdx }
func (flowOrder) Prefix(k sortKey) uint64 { return flowPrefix(&k) }

// flowPrefix abbreviates a sort key to 64 bits that order as lessKey does,
// or tie (then the queue compares the whole keys):
//
//	bit 63      0 for an urgent flow (those go first)
//	urgent:     the rest is the head's aging start, less its lowest bit
//	otherwise:  16 bits of effective priority, highest first, exact within
//	            ±(2^15-2) (beyond it the two ends, with the rest zero);
//	            1 bit, 0 when the key is below its MinSeats;
//	            46 bits of V_k: its IEEE 754 bits as an ordered integer,
//	            less the 18 lowest (a relative precision of 2^-34)
//
// Every field is a non-decreasing function of the order from the field
// before it down, so lessKey(a, b) implies flowPrefix(a) <= flowPrefix(b);
// TestFlowPrefixOrder checks it.
func flowPrefix(k *sortKey) uint64 {
	if k.urgent {
		return orderedInt(int64(k.headAt)) >> 1
	}
	const span = 1<<15 - 1 // priorities in (-span, span) are exact
	switch e := int64(k.eff); {
	case e >= span:
		return 1 << 63
	case e <= -span:
		return 1<<63 | 0xffff<<47
	default:
		p := uint64(1<<63) | uint64(span-e)<<47
		if !k.belowMin {
			p |= 1 << 46
		}
		return p | orderedFloat(k.v)>>18
	}
}

// orderedInt maps an int64 to a uint64 of the same order.
func orderedInt(x int64) uint64 { return uint64(x) ^ 1<<63 }

// orderedFloat maps a float64 other than NaN to a uint64 of the same order.
func orderedFloat(x float64) uint64 {
	b := math.Float64bits(x)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}
