package admission

import "github.com/fairseat/fairseat/internal/ringheap"

// sortKey is a flow's place in the dispatch order at its last sync (see
// lessKey): the head's rank, its key's MinSeats status and virtual time, and
// the head's age and sequence.
type sortKey struct {
	v        float64 // key.v
	headAt   int64   // head's aging start, Unix nanoseconds
	headSeq  uint64  // head's seq
	eff      Priority
	urgent   bool
	belowMin bool
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
// f, its key's virtual time and MinSeats status, its head's age.
func flowSortKey(f *flow) sortKey {
	return sortKey{v: f.key.v, headAt: f.headAgingAt(), headSeq: f.jobs.TopKey().seq, eff: f.eff, urgent: f.urgent, belowMin: f.key.belowMin()}
}

// headAgingAt is the aging start of f's best job, read from its order key
// in the flow's queue, so that ordering flows reads no job record; only a
// ShortestFirst key is shifted by the job's cost, and then it comes from
// the job.
func (f *flow) headAgingAt() int64 {
	hk, h := f.jobs.Peek()
	if f.typ.smithA > 0 {
		return h.agingAt
	}
	return hk.at
}

func newFlowHeap() ringheap.Queue[sortKey, *flow] {
	return ringheap.NewQueue(flowSortKey, lessKey, flowTypIndex)
}
