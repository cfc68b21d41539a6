package admission

// keyTable holds the state of fairness keys by name: every active key, and
// idle keys until MaxKeys or KeyTTL has them forgotten, those idle longest
// first. It takes no locks.
//
// Idle keys are listed in idle in the order they went idle. A key that
// becomes active again is not searched for and unlinked: its entry is
// simply dead from then on, told by the key's idlePos (1 + the index of its
// live entry, 0 while it has none). So activating a key writes the key
// alone, and going idle appends one entry. (The LRU list this replaces
// moved a key to its front at every activation, writing the key's two
// neighbours, two cache misses per activation once the keys outgrew the
// cache, and needed a second map look-up.) Dead entries are dropped when
// they reach the front, or at once when they are the newest; when the list
// (its dropped front included) holds more than twice its live entries
// (plus a few), the live ones are moved to the start, in order, and their
// keys' idlePos rewritten: each entry is dropped once, O(1) amortized per
// change, and the list's array stays within a small multiple of the most
// idle keys there have been.
//
// Invariants: byName[k.name] == k for every tracked key k; a tracked key
// is idle iff idlePos > 0, and then idle[idlePos-1] == k; nIdle is the
// number of idle tracked keys; idle[:head] are nil; a key that is not
// tracked has idlePos 0.
type keyTable struct {
	byName map[string]*keyState
	idle   []*keyState // idle keys oldest first, dead entries included; idle[:head] dropped
	head   int
	nIdle  int // live entries of idle: idle tracked keys
}

func newKeyTable() keyTable { return keyTable{byName: make(map[string]*keyState)} }

// get returns the state of key name, or nil.
func (t *keyTable) get(name string) *keyState { return t.byName[name] }

// len is the number of tracked keys, active and idle.
func (t *keyTable) len() int { return len(t.byName) }

// add tracks k, a new active key.
func (t *keyTable) add(k *keyState) { t.byName[k.name] = k }

// activated records that k, a tracked idle key, is active: its entry dies,
// and is dropped at once if it is the newest (a key that went idle and came
// straight back, the usual case of a busy caller, leaves nothing behind).
func (t *keyTable) activated(k *keyState) {
	if n := len(t.idle); int(k.idlePos) == n {
		t.idle[n-1] = nil
		t.idle = t.idle[:n-1]
	}
	k.idlePos = 0
	t.nIdle--
}

// idled records that k, a tracked key, went idle: it is the newest idle.
func (t *keyTable) idled(k *keyState) {
	// The dropped front counts: keys forgotten oldest first leave it behind
	// while the live entries stay few, and appending alone would keep
	// growing the array by a pointer per key ever idle.
	if len(t.idle) >= 2*t.nIdle+8 {
		t.compact()
	}
	t.idle = append(t.idle, k)
	k.idlePos = int32(len(t.idle))
	t.nIdle++
}

func (t *keyTable) live(i int) bool { return t.idle[i] != nil && int(t.idle[i].idlePos) == i+1 }

// oldestIdle returns the key idle longest, or nil.
func (t *keyTable) oldestIdle() *keyState {
	for t.head < len(t.idle) && !t.live(t.head) {
		t.idle[t.head] = nil
		t.head++
	}
	if t.head == len(t.idle) {
		t.idle, t.head = t.idle[:0], 0
		return nil
	}
	return t.idle[t.head]
}

// forgetOldest forgets the key idle longest; there must be one (oldestIdle
// returned it).
func (t *keyTable) forgetOldest() {
	k := t.idle[t.head]
	t.idle[t.head] = nil
	t.head++
	delete(t.byName, k.name)
	k.idlePos = 0
	t.nIdle--
}

// compact moves the live entries to the start of idle, in order.
func (t *keyTable) compact() {
	w := 0
	for i := t.head; i < len(t.idle); i++ {
		if t.live(i) {
			k := t.idle[i]
			t.idle[w] = k
			k.idlePos = int32(w + 1)
			w++
		}
	}
	clear(t.idle[w:])
	t.idle, t.head = t.idle[:w], 0
}

// keyLocked returns the tracked state of key name, or nil. Active keys are
// always tracked.
func (s *Scheduler) keyLocked(name string) *keyState { return s.keys.get(name) }

// activateKeyLocked returns the state of key name, making it active.
func (s *Scheduler) activateKeyLocked(name string, now int64) *keyState {
	return s.wakeKeyLocked(s.keyLocked(name), name, now)
}

// wakeKeyLocked makes k, the state of key name (nil if untracked), active:
// an idle or new key starts at max(V_k, V_sys), so idleness earns no credit.
func (s *Scheduler) wakeKeyLocked(k *keyState, name string, now int64) *keyState {
	switch {
	case k != nil && k.active:
		return k
	case k != nil:
		s.keys.activated(k)
		if sinceNs(now, k.idleSince) > s.cfg.KeyTTL {
			k.v = s.vsys // expired: its history is forgotten, as if evicted
		}
	default: // untracked: a new key
		s.expireKeysLocked(now)
		p := s.policyFor(name)
		k = &keyState{name: name, policy: p, w: s.weightFor(name, p), v: s.vsys, configured: s.obs.isConfigured(name)}
		k.paused = s.pausedKeys[name] != nil
		s.keys.add(k)
		s.boundKeysLocked()
	}
	if k.v < s.vsys {
		k.v = s.vsys
	}
	k.active = true
	s.keyActivatedLocked(k, now)
	return k
}

// expireKeysLocked forgets up to two idle keys past KeyTTL, the longest
// idle first, so idle state also expires by time without a sweeper. A key
// that returns after KeyTTL is treated as new whether or not it was
// forgotten (wakeKeyLocked).
func (s *Scheduler) expireKeysLocked(now int64) {
	for range 2 {
		k := s.keys.oldestIdle()
		if k == nil || sinceNs(now, k.idleSince) <= s.cfg.KeyTTL {
			return
		}
		s.keys.forgetOldest()
	}
}

// boundKeysLocked forgets the keys idle longest while more than MaxKeys are
// tracked. Active keys are never forgotten, so while more than MaxKeys are
// active all of them are tracked, and the bound holds again as they go
// idle. Forgetting idle state is safe: a key that returns starts at V_sys,
// exactly as a new one does, so it never gains credit.
func (s *Scheduler) boundKeysLocked() {
	for s.keys.len() > s.cfg.MaxKeys && s.keys.oldestIdle() != nil {
		s.keys.forgetOldest()
	}
}

// maybeIdleLocked makes k idle when it has nothing queued or running.
func (s *Scheduler) maybeIdleLocked(k *keyState, now int64) {
	if !k.active || k.queued > 0 || k.running > 0 {
		return
	}
	k.active = false
	k.idleSince = now
	s.keyIdledLocked(k, now)
	s.keys.idled(k)
	s.boundKeysLocked()
}
