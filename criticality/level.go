package criticality

import (
	"errors"
	"fmt"
)

// Level is how critical a request is. The zero value is Critical, the
// default. Higher values are more critical, and each level's value is its
// default priority offset (see the package doc). It is a plain value.
type Level int8

const (
	// Sheddable work may wait long or be refused under load: batch jobs,
	// prefetching, retries that nobody waits for.
	Sheddable Level = -2
	// SheddablePlus is work that may wait, though somebody wants the result.
	SheddablePlus Level = -1
	// Critical is the default: a user waits for the result.
	Critical Level = 0
	// CriticalPlus is the work a service exists for, served before the rest.
	CriticalPlus Level = 1
)

// MetadataKey is the gRPC metadata key that carries a level (lower case,
// as gRPC requires).
const MetadataKey = "fairseat-criticality"

// Header is the HTTP header that carries a level (canonical form).
const Header = "Fairseat-Criticality"

// ErrInvalid is returned (wrapped) by Parse for a string that names no level.
var ErrInvalid = errors.New("criticality: not a level")

// names are the levels' wire names, from Sheddable up.
var names = [...]string{"sheddable", "sheddable_plus", "critical", "critical_plus"}

// Valid reports whether l is one of the four levels.
func (l Level) Valid() bool { return l >= Sheddable && l <= CriticalPlus }

// String returns the level's wire name ("critical_plus"), or
// "Level(n)" for a value that is not a level.
func (l Level) String() string {
	if !l.Valid() {
		return fmt.Sprintf("Level(%d)", int8(l))
	}
	return names[l-Sheddable]
}

// Parse returns the level named s: "critical_plus", "critical",
// "sheddable_plus" or "sheddable", in any ASCII case ("CRITICAL_PLUS", as
// the SRE book's enum spells it, is accepted). Anything else, including
// surrounding spaces, fails with an error wrapping ErrInvalid that quotes
// at most 32 bytes of s.
func Parse(s string) (Level, error) {
	for i, n := range names {
		if equalFoldASCII(s, n) {
			return Sheddable + Level(i), nil
		}
	}
	if len(s) > 32 {
		s = s[:32] + "..."
	}
	return Critical, fmt.Errorf("%w: %q", ErrInvalid, s)
}

// equalFoldASCII reports whether s equals name, a lower-case ASCII name,
// up to ASCII case. (strings.EqualFold folds Unicode too: it would take
// "ſheddable", with U+017F, for "sheddable".)
func equalFoldASCII(s, name string) bool {
	if len(s) != len(name) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}
