package harness

import (
	"fmt"
	"testing"

	"github.com/fairseat/fairseat/benchmarks/peer"
)

// go test -run='^$' -bench=. -count=10 ./harness > new.txt; benchstat new.txt

func BenchmarkUncontended(b *testing.B) {
	for _, p := range peer.All() {
		b.Run(p.Name, func(b *testing.B) { Uncontended(b, p) })
	}
}

func BenchmarkSaturated(b *testing.B) {
	for _, g := range SaturatedGoroutines {
		for _, p := range peer.All() {
			if !Contends(p) {
				continue
			}
			b.Run(fmt.Sprintf("goroutines=%d/%s", g, p.Name), func(b *testing.B) { Saturated(b, p, g) })
		}
	}
}

func BenchmarkKeys(b *testing.B) {
	for _, n := range KeyCounts {
		for _, p := range peer.All() {
			if !Contends(p) {
				continue
			}
			b.Run(fmt.Sprintf("keys=%d/%s", n, p.Name), func(b *testing.B) { Keys(b, p, n) })
		}
	}
}

func BenchmarkUnaryRPC(b *testing.B) {
	for _, v := range RPCVariants() {
		b.Run(v, func(b *testing.B) { UnaryRPC(b, v) })
	}
}
