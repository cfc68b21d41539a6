// Package peer puts fairseat and the libraries it is compared with behind
// one small interface, so that one harness measures them all in the same
// run.
//
// The interface is callback-shaped (Do) rather than acquire/release-shaped:
// the Kubernetes queue set only exposes Request.Finish(execute), which waits
// for a seat, runs execute and releases the seat in one call. An
// acquire/release shape would force a goroutine and two channels per request
// onto that one peer and measure the adapter instead of the library. Every
// other peer maps to Do with its own acquire and release around fn.
package peer

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// A Limiter admits work under a concurrency limit.
type Limiter interface {
	// Do waits for a seat on behalf of the fairness key, runs fn holding it
	// and releases it. It returns an error, without running fn, when the
	// limiter refuses the request or ctx ends first. Keys mean nothing to
	// peers without fairness.
	Do(ctx context.Context, key string, fn func()) error
	// Close releases what the limiter holds. Do must not be called after it.
	Close() error
}

// Config is what every peer is built from.
type Config struct {
	// Capacity is the number of seats: requests running at once.
	Capacity int
	// Weights gives keys a relative share, for peers that have weights
	// (missing keys weigh 1). Peers that need their keys up front
	// (partitions) take them from here.
	Weights map[string]float64
}

// A Peer is one library (or one configuration of it) under comparison.
type Peer struct {
	Name string
	// Keyed: the peer separates requests by fairness key.
	Keyed bool
	// Weighted: the peer honours Config.Weights as relative shares.
	Weighted bool
	// Partitioned: the peer needs every key in Config.Weights up front and
	// reserves a share of the capacity for each.
	Partitioned bool
	// MaxHolders is how many requests the peer may let run at once for a
	// config, when that is more than Capacity by design (see gcl.go); nil
	// means Capacity.
	MaxHolders func(Config) int
	New        func(Config) (Limiter, error)
}

// Holders returns the most requests p lets run at once under c.
func (p Peer) Holders(c Config) int {
	if p.MaxHolders != nil {
		return p.MaxHolders(c)
	}
	return c.Capacity
}

var registry = map[string]Peer{}

func register(p Peer) {
	if _, dup := registry[p.Name]; dup {
		panic("peer: duplicate " + p.Name)
	}
	registry[p.Name] = p
}

// Order is the order peers are listed in: the floor first, fairseat last.
var Order = []string{
	"channel",
	"semaphore",
	"gcl-fixed",
	"gcl-partitioned",
	"apf-hand6",
	"apf-hand1",
	"fairseat",
}

// All returns every peer in Order.
func All() []Peer {
	ps := make([]Peer, 0, len(registry))
	for _, n := range Order {
		if p, ok := registry[n]; ok {
			ps = append(ps, p)
		}
	}
	if len(ps) != len(registry) {
		var names []string
		for n := range registry {
			names = append(names, n)
		}
		sort.Strings(names)
		panic(fmt.Sprintf("peer: Order %v does not list all of %v", Order, names))
	}
	return ps
}

// Lookup returns the peer named name.
func Lookup(name string) (Peer, bool) {
	p, ok := registry[name]
	return p, ok
}

// ErrRejected is returned by Do when a peer refuses a request outright
// (a full queue) rather than because the caller's context ended.
var ErrRejected = errors.New("peer: request rejected")

// weightOf returns w's weight for key, 1 when unset.
func weightOf(w map[string]float64, key string) float64 {
	if v, ok := w[key]; ok && v > 0 {
		return v
	}
	return 1
}
