// Package harness measures the limiters of package peer: micro-benchmarks
// (uncontended, saturated, growth with active keys), fairness runs (closed
// loops, a weighted pair, a flood against a light client) and gRPC
// end-to-end overhead over loopback TCP. The benchmarks in bench_test.go and
// the report in cmd/report run the same functions.
package harness
