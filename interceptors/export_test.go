package interceptors

// WithRand replaces the random source of the client interceptors' throttle
// draws, so that tests are deterministic.
var WithRand = withRand
