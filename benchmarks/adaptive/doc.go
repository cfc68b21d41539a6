// Package adaptive compares fairseat's adaptive capacity with fixed
// capacities and with the adaptive limiters of other libraries, on one
// simulated server (internal/simserver): a job's seat time is base × max(1, running/C), running
// the jobs the server runs at its start and C its true capacity. Past C the
// server does no more work; each job only takes longer. Some scenarios vary
// the server: in two its seat times vary from job to job (noisy), in two it
// thrashes past C (it does less in all; one of these is noisy too), and in
// one it shares itself among the jobs running at every instant
// (simserver.NewShared: a job slows down as soon as others join it, so
// running more than C jobs never gets more than C seats of work, not even
// for a moment).
//
// The load is a flood (closed loops with nothing between requests, more
// than the server can serve) and a light client (one loop with a pause
// between requests), over 100 repositories, a fifth of them heavy (6 times
// the seat time of a light one, asked for a tenth of the time). Every
// limiter is run the same way: Run plays the scenario against it inside a
// testing/synctest bubble, so the run takes fake time (the peers read
// time.Now, which the bubble fakes) and is reproducible up to the order of
// goroutines woken at one instant. Besides goodput and latency, a run
// accounts where the goodput was lost against the true capacity (Loss):
// while the limiter probed, while its limit was below C, or otherwise.
// TestReport runs them all, each limiter once with each of Rounds draws
// of jobs (Scenario.Draw); with -report it writes ADAPTIVE.md and
// adaptive.svg (in benchmarks/: go test ./adaptive -run '^TestReport$'
// -report=..).
//
// TestWallClock asks whether the report's figures hold where the clock is
// real. With -wallclock it runs the limiters outside synctest, in real
// time: on the simulated servers, and on this machine's CPU (the CPU
// scenario, cpuServer: jobs burn the cores, whose number is the true
// capacity, and half of them are taken away for the middle third). Its
// figures depend on the machine and what else runs on it; it is not part
// of the report.
package adaptive
