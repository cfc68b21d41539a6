// Command thrash stands in for the other guests of a shared machine: it
// streams through a buffer larger than the last-level cache, one cache
// line at a time, so that whatever runs beside it finds less of its own
// state in that cache. ADMISSION.md uses it to measure the dispatch
// benchmark under cache pressure:
//
//	go run ./cmd/thrash -mb 64 -d 10m &
//	GOMAXPROCS=1 ./admission.test -test.run='^$' -test.bench=...
//
// Whether it shares the L3 with the benchmark depends on where the host
// places the two vCPUs, which can change from minute to minute; compare
// only binaries run in turn beside the same thrash process.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	mb := flag.Int("mb", 64, "buffer size in MiB (larger than the last-level cache)")
	d := flag.Duration("d", time.Minute, "how long to run")
	flag.Parse()
	if *mb <= 0 || *d <= 0 {
		fmt.Fprintln(os.Stderr, "thrash: -mb and -d must be positive")
		os.Exit(2)
	}
	buf := make([]byte, *mb<<20)
	var sum byte
	for end := time.Now().Add(*d); time.Now().Before(end); {
		for i := 0; i < len(buf); i += 64 {
			buf[i]++
			sum += buf[i]
		}
	}
	fmt.Println(sum) // keeps the loop from being optimized away
}
