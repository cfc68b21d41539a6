package criticality_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fairseat/fairseat/criticality"
)

// FuzzParse parses arbitrary values of the criticality header and
// metadata: nothing panics; a value parses exactly when it is one of the
// four levels' names up to ASCII case, to that level; anything else is
// Critical with a short error wrapping ErrInvalid; and changing the ASCII
// case of a value never changes its result.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"critical_plus", "CRITICAL", "Sheddable_Plus", "sheddable ", "", "\xff", "critical_plus\x00", "ſheddable", strings.Repeat("x", 200)} {
		f.Add(s)
	}
	levels := []criticality.Level{criticality.Sheddable, criticality.SheddablePlus, criticality.Critical, criticality.CriticalPlus}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := criticality.Parse(s)
		named := false
		for _, lv := range levels {
			if strings.EqualFold(s, lv.String()) && isASCII(s) {
				named = true
				if err != nil || l != lv {
					t.Fatalf("Parse(%q) = %v, %v; want %v", s, l, err, lv)
				}
			}
		}
		if !named {
			if err == nil || !errors.Is(err, criticality.ErrInvalid) || l != criticality.Critical {
				t.Fatalf("Parse(%q) = %v, %v; want critical and ErrInvalid", s, l, err)
			}
			if len(err.Error()) > 200 {
				t.Fatalf("Parse(%.40q): an error of %d bytes", s, len(err.Error()))
			}
		}
		if isASCII(s) {
			for _, c := range []string{strings.ToUpper(s), strings.ToLower(s)} {
				if l2, err2 := criticality.Parse(c); l2 != l || (err2 == nil) != (err == nil) {
					t.Fatalf("Parse(%q) = %v, %v but Parse(%q) = %v, %v", s, l, err, c, l2, err2)
				}
			}
		}
	})
}

// isASCII reports whether s is all ASCII. (The names are ASCII; a
// non-ASCII value that folds to one, "ſheddable" with a long s, names no
// level on the wire and must be refused.)
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
