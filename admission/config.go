package admission

import (
	"fmt"
	"math"
	"time"
)

// JobType names a kind of work, usually a route ("sync-clone",
// "/git.v1.Git/Clone"). Register it once with [Scheduler.RegisterType].
type JobType string

// ConflictGroup names a family of job types that must not run at the same
// time on the same job ID. The empty group conflicts with nothing.
type ConflictGroup string

// Priority orders job types: higher is dispatched first. The value is also
// the concurrency cap of its tier unless [Config.TierLimits] overrides it.
type Priority int

// Conventional priorities from the Go seed: at most 10 background and 40
// foreground jobs at once, foreground first.
const (
	PriorityBackground Priority = 10
	PriorityForeground Priority = 40
)

// JobTypeConfig describes one job type. The zero value is not usable: a type
// needs a Priority that admits something.
type JobTypeConfig struct {
	DefaultCost    time.Duration // estimate before the first observation; 0 = 1s
	MaxConcurrency int           // running jobs of this type; 0 = no cap
	ConflictGroup  ConflictGroup // "" = conflicts with nothing
	Priority       Priority      // higher first; value = tier cap unless Config.TierLimits
	MaxWait        time.Duration // time allowed in the queue (background: the TTL); 0 = until ctx ends

	// Access says whether jobs of this type may share their resource
	// (conflict group and job ID) with other shared jobs. Default Exclusive.
	Access Access
	// Order is the order of one key's queued jobs of this type: FIFO by
	// default, or ShortestFirst (Smith's rule with aging) with OrderAging
	// the aging factor a in 1/r + a·wait (seconds; 0 = 0.1).
	Order      Order
	OrderAging float64
	// Duplicates and Retry apply to background jobs (Submit).
	Duplicates DuplicatePolicy
	Retry      RetryPolicy
	// NoAging keeps the type's jobs at their base priority however long
	// they wait: never promoted, never urgent (and no StarvationBound). For
	// foreground types served by fairness alone: urgent jobs go oldest
	// first across all callers, so a flood's oldest requests would
	// otherwise go before a light caller's.
	NoAging bool
}

// Access is how a job uses its resource.
type Access uint8

const (
	// Exclusive jobs run alone on their resource.
	Exclusive Access = iota
	// Shared jobs run together with other shared jobs on their resource,
	// never with an exclusive one. A waiting exclusive job stops new shared
	// jobs on its resource from overtaking it.
	Shared
)

// Order is the order of one fairness key's queued jobs of one type.
type Order uint8

const (
	// FIFO serves a key's jobs of a type oldest first.
	FIFO Order = iota
	// ShortestFirst serves first the job with the highest 1/r + a·wait, r its
	// learned cost estimate in seconds and wait its time in the queue in
	// seconds (Smith's rule with aging): cheap jobs go first, and a costly
	// one overtakes a cheap one arriving (1/r_cheap - 1/r_costly)/a seconds
	// after it, so none waits forever. Across keys and types the dispatch
	// order is unchanged.
	ShortestFirst
)

// AgingConfig turns on priority aging (see the package doc for the formulas
// and the starvation bound). Interval must be positive.
type AgingConfig struct {
	Grace, Interval time.Duration
	Step            Priority // added per promotion; 0 = 1
	Max             Priority // ceiling of aged priorities (never below a job's base); 0 = none
	Urgent          Priority // aged priority at which a job becomes urgent; 0 = never
}

// KeyPolicy is the per-fairness-key policy. The zero value is weight 1 and no
// caps.
type KeyPolicy struct {
	Weight      float64 // relative share; 0 = 1
	MinSeats    int     // seats this key is served first up to
	MaxInFlight int     // 0 = no cap
	MaxQueued   int     // 0 = no per-key bound
}

// Config configures a [Scheduler]. Only Capacity is required; every other
// zero field takes the default named on it. New copies what it keeps, so the
// caller may reuse or modify a Config afterwards.
type Config struct {
	Capacity       int                  // total seats; required, > 0, unless Adaptive is set
	TierLimits     map[Priority]int     // overrides "priority value = tier cap"
	Aging          *AgingConfig         // nil = no aging
	Keys           map[string]KeyPolicy // per-key policies
	DefaultKey     KeyPolicy            // for keys not in Keys
	MaxQueue       int                  // total queued; 0 = DefaultMaxQueue
	CostAlpha      float64              // EMA smoothing in (0, 1]; 0 = 0.3
	MaxKeys        int                  // tracked fairness keys (LRU: idle keys are forgotten, idle longest first); 0 = DefaultMaxKeys
	KeyTTL         time.Duration        // idle key state expiry; 0 = DefaultKeyTTL
	MaxCostEntries int                  // tracked cost estimates (LRU); 0 = DefaultMaxCostEntries
	CostTTL        time.Duration        // cost estimate expiry; 0 = DefaultCostTTL
	// DryRun computes, counts and traces every decision but admits every
	// request and job at once (see Scheduler.SetDryRun).
	DryRun bool
	// DeadlineAware turns away at once, with ErrDeadlineTooSoon, a request
	// that would have to wait and whose context deadline ends before the
	// earliest time it could start (see Scheduler.Acquire).
	DeadlineAware bool
	// Pressure, if set, holds back low-priority work while the server is
	// under pressure (see PressureConfig). With Adaptive set, its source
	// also lowers the limit.
	Pressure *PressureConfig
	// Adaptive, if set, makes the capacity adaptive: the number of seats
	// follows what the server can do, between Adaptive.Min and Max (see
	// AdaptiveConfig and the package doc). Capacity is then optional: if
	// set, it is the initial limit (and must equal Adaptive.Initial if
	// that is set too). Keys' MinSeats must fit in Adaptive.Min.
	Adaptive *AdaptiveConfig
}

// Defaults for the zero fields of [Config] and [JobTypeConfig].
const (
	DefaultMaxQueue       = 10000
	DefaultCostAlpha      = 0.3
	DefaultMaxKeys        = 10000
	DefaultKeyTTL         = 10 * time.Minute
	DefaultMaxCostEntries = 10000
	DefaultCostTTL        = 24 * time.Hour
	DefaultJobCost        = time.Second
	DefaultOrderAging     = 0.1
)

// MaxIdentifierLen bounds fairness keys and job IDs. Longer values are
// replaced by a SHA-256 digest ("sha256:<hex>") before the scheduler stores
// them, so a hostile caller cannot make the scheduler hold megabyte keys;
// distinct long values stay distinct.
const MaxIdentifierLen = 512

// validate checks c and returns a copy with every default filled in.
func (c Config) validate() (Config, error) {
	minCapacity := c.Capacity // what MinSeats must fit in
	if c.Adaptive != nil {
		if c.Capacity < 0 {
			return c, fmt.Errorf("%w: Capacity must be >= 0 with Adaptive set, got %d", ErrInvalidConfig, c.Capacity)
		}
		a, err := c.Adaptive.validate(c.Capacity)
		if err != nil {
			return c, err
		}
		c.Adaptive, c.Capacity, minCapacity = &a, a.Initial, a.Min
	}
	if c.Capacity <= 0 {
		return c, fmt.Errorf("%w: Capacity must be > 0, got %d", ErrInvalidConfig, c.Capacity)
	}
	limits := make(map[Priority]int, len(c.TierLimits))
	for p, n := range c.TierLimits {
		if n <= 0 {
			return c, fmt.Errorf("%w: TierLimits[%d] must be > 0, got %d", ErrInvalidConfig, p, n)
		}
		limits[p] = n
	}
	c.TierLimits = limits // New keeps copies: later changes to the caller's maps have no effect
	var err error
	if c.Aging != nil {
		if c.Aging, err = c.Aging.validate(); err != nil {
			return c, err
		}
	}
	if err := c.DefaultKey.validate("DefaultKey", minCapacity); err != nil {
		return c, err
	}
	if c.Keys, err = validateKeys(c.Keys, minCapacity); err != nil {
		return c, err
	}
	if err := c.validateBounds(); err != nil {
		return c, err
	}
	if c.Pressure != nil {
		if c.Pressure, err = c.Pressure.validate(); err != nil {
			return c, err
		}
	}
	return c, nil
}

// validate returns a copy of a with Step's default applied, or an error
// naming the bad field.
func (a *AgingConfig) validate() (*AgingConfig, error) {
	switch {
	case a.Interval <= 0:
		return nil, fmt.Errorf("%w: Aging.Interval must be > 0, got %v", ErrInvalidConfig, a.Interval)
	case a.Grace < 0:
		return nil, fmt.Errorf("%w: Aging.Grace must be >= 0, got %v", ErrInvalidConfig, a.Grace)
	case a.Step < 0:
		return nil, fmt.Errorf("%w: Aging.Step must be >= 0, got %d", ErrInvalidConfig, a.Step)
	case a.Max < 0:
		return nil, fmt.Errorf("%w: Aging.Max must be >= 0, got %d", ErrInvalidConfig, a.Max)
	case a.Urgent < 0:
		return nil, fmt.Errorf("%w: Aging.Urgent must be >= 0, got %d", ErrInvalidConfig, a.Urgent)
	}
	c := *a
	if c.Step == 0 {
		c.Step = 1
	}
	return &c, nil
}

// validateKeys returns a copy of the configured keys' policies, by folded
// name, or an error naming the bad one; their MinSeats must fit in
// minCapacity together.
func validateKeys(keys map[string]KeyPolicy, minCapacity int) (map[string]KeyPolicy, error) {
	minSum := 0
	out := make(map[string]KeyPolicy, len(keys))
	for k, p := range keys {
		if err := p.validate(fmt.Sprintf("Keys[%q]", k), minCapacity); err != nil {
			return nil, err
		}
		minSum += p.MinSeats
		out[foldIdentifier(k)] = p
	}
	if minSum > minCapacity {
		return nil, fmt.Errorf("%w: Keys: MinSeats sum to %d, above Capacity %d (Adaptive.Min when adaptive)", ErrInvalidConfig, minSum, minCapacity)
	}
	return out, nil
}

// validateBounds checks the bounds on the scheduler's own memory and
// learning (MaxQueue, MaxKeys, MaxCostEntries, KeyTTL, CostTTL, CostAlpha)
// and applies their defaults.
func (c *Config) validateBounds() error {
	var err error
	if c.MaxQueue, err = positiveOr("MaxQueue", c.MaxQueue, DefaultMaxQueue); err != nil {
		return err
	}
	if c.MaxKeys, err = positiveOr("MaxKeys", c.MaxKeys, DefaultMaxKeys); err != nil {
		return err
	}
	if c.MaxCostEntries, err = positiveOr("MaxCostEntries", c.MaxCostEntries, DefaultMaxCostEntries); err != nil {
		return err
	}
	if c.KeyTTL < 0 || c.CostTTL < 0 {
		return fmt.Errorf("%w: KeyTTL and CostTTL must be >= 0, got %v and %v", ErrInvalidConfig, c.KeyTTL, c.CostTTL)
	}
	if c.KeyTTL == 0 {
		c.KeyTTL = DefaultKeyTTL
	}
	if c.CostTTL == 0 {
		c.CostTTL = DefaultCostTTL
	}
	if math.IsNaN(c.CostAlpha) || c.CostAlpha < 0 || c.CostAlpha > 1 {
		return fmt.Errorf("%w: CostAlpha must be in [0, 1], got %v", ErrInvalidConfig, c.CostAlpha)
	}
	if c.CostAlpha == 0 {
		c.CostAlpha = DefaultCostAlpha
	}
	return nil
}

func positiveOr(field string, v, def int) (int, error) {
	if v < 0 {
		return 0, fmt.Errorf("%w: %s must be >= 0, got %d", ErrInvalidConfig, field, v)
	}
	if v == 0 {
		return def, nil
	}
	return v, nil
}

func (p KeyPolicy) validate(field string, capacity int) error {
	switch {
	case math.IsNaN(p.Weight) || math.IsInf(p.Weight, 0) || p.Weight < 0:
		return fmt.Errorf("%w: %s.Weight must be a finite number >= 0, got %v", ErrInvalidConfig, field, p.Weight)
	case p.MinSeats < 0 || p.MinSeats > capacity:
		return fmt.Errorf("%w: %s.MinSeats must be in [0, Capacity=%d], got %d", ErrInvalidConfig, field, capacity, p.MinSeats)
	case p.MaxInFlight < 0:
		return fmt.Errorf("%w: %s.MaxInFlight must be >= 0, got %d", ErrInvalidConfig, field, p.MaxInFlight)
	case p.MaxQueued < 0:
		return fmt.Errorf("%w: %s.MaxQueued must be >= 0, got %d", ErrInvalidConfig, field, p.MaxQueued)
	}
	return nil
}

// weight is the policy's weight with the zero default applied.
func (p KeyPolicy) weight() float64 {
	if p.Weight == 0 {
		return 1
	}
	return p.Weight
}

// validate checks a job type's config against the scheduler's and returns
// it with defaults filled in.
func (c JobTypeConfig) validate(t JobType, cfg *Config) (JobTypeConfig, error) {
	switch {
	case t == "":
		return c, fmt.Errorf("%w: job type name must not be empty", ErrInvalidConfig)
	case c.DefaultCost < 0:
		return c, fmt.Errorf("%w: job type %q: DefaultCost must be >= 0, got %v", ErrInvalidConfig, t, c.DefaultCost)
	case c.MaxConcurrency < 0:
		return c, fmt.Errorf("%w: job type %q: MaxConcurrency must be >= 0, got %d", ErrInvalidConfig, t, c.MaxConcurrency)
	case c.MaxWait < 0:
		return c, fmt.Errorf("%w: job type %q: MaxWait must be >= 0, got %v", ErrInvalidConfig, t, c.MaxWait)
	case c.Access > Shared:
		return c, fmt.Errorf("%w: job type %q: unknown Access %d", ErrInvalidConfig, t, c.Access)
	case c.Order > ShortestFirst:
		return c, fmt.Errorf("%w: job type %q: unknown Order %d", ErrInvalidConfig, t, c.Order)
	case math.IsNaN(c.OrderAging) || math.IsInf(c.OrderAging, 0) || c.OrderAging < 0:
		return c, fmt.Errorf("%w: job type %q: OrderAging must be a finite number >= 0, got %v", ErrInvalidConfig, t, c.OrderAging)
	case c.Duplicates > Supersede:
		return c, fmt.Errorf("%w: job type %q: unknown Duplicates %d", ErrInvalidConfig, t, c.Duplicates)
	case c.Retry.MaxAttempts < 0 || c.Retry.Initial < 0 || c.Retry.Max < 0:
		return c, fmt.Errorf("%w: job type %q: Retry fields must be >= 0, got %+v", ErrInvalidConfig, t, c.Retry)
	case c.Order == FIFO && c.OrderAging != 0:
		return c, fmt.Errorf("%w: job type %q: OrderAging applies to Order ShortestFirst only", ErrInvalidConfig, t)
	case c.Access == Shared && c.ConflictGroup == "":
		return c, fmt.Errorf("%w: job type %q: Access Shared needs a ConflictGroup (without one the type conflicts with nothing)", ErrInvalidConfig, t)
	}
	if c.Order == ShortestFirst && c.OrderAging == 0 {
		c.OrderAging = DefaultOrderAging
	}
	if tierCap(cfg, c.Priority) <= 0 {
		return c, fmt.Errorf("%w: job type %q: Priority %d admits no job (its value is the tier cap); use a positive Priority or set Config.TierLimits[%d]",
			ErrInvalidConfig, t, c.Priority, c.Priority)
	}
	if a := cfg.Aging; a != nil && !c.NoAging && a.Urgent > 0 && c.Priority >= a.Urgent {
		return c, fmt.Errorf("%w: job type %q: Priority %d must be below Aging.Urgent %d, or every job of the type would be urgent on arrival",
			ErrInvalidConfig, t, c.Priority, a.Urgent)
	}
	if c.DefaultCost == 0 {
		c.DefaultCost = DefaultJobCost
	}
	return c, nil
}

// tierCap is the number of jobs of base priority p that may run at once.
func tierCap(cfg *Config, p Priority) int {
	if n, ok := cfg.TierLimits[p]; ok {
		return n
	}
	return int(p)
}

// agingOf is the aging that applies to a type: the scheduler's, unless the
// type has NoAging.
func agingOf(cfg *Config, c JobTypeConfig) *AgingConfig {
	if c.NoAging {
		return nil
	}
	return cfg.Aging
}
