package clientkey

import (
	"crypto/x509"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestIP(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		prefix int
		want   string
	}{
		{"203.0.113.7", 0, "ip:203.0.113.7"},
		{"::ffff:203.0.113.7", 0, "ip:203.0.113.7"}, // IPv4-mapped: one client, one key
		{"2001:db8:1:2:aaaa::1", 0, "ip:2001:db8:1:2::/64"},
		{"2001:db8:1:2:bbbb::9", 64, "ip:2001:db8:1:2::/64"}, // same /64: same key
		{"2001:db8:1:2:bbbb::9", 48, "ip:2001:db8:1::/48"},
		{"2001:db8:1:2:bbbb::9", 128, "ip:2001:db8:1:2:bbbb::9/128"},
		{"fe80::1%eth0", 0, "ip:fe80::/64"},
		{"2001:db8::1", 999, "ip:2001:db8::/64"},
	} {
		if got := IP(netip.MustParseAddr(tc.addr), tc.prefix); got != tc.want {
			t.Errorf("IP(%s, %d) = %q, want %q", tc.addr, tc.prefix, got, tc.want)
		}
	}
	if got := IP(netip.Addr{}, 0); got != "ip:invalid" {
		t.Errorf("IP(zero) = %q", got)
	}
}

func TestParseAddr(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.7:5555":         "203.0.113.7",
		"203.0.113.7":              "203.0.113.7",
		"[2001:db8::1]:443":        "2001:db8::1",
		"2001:db8::1":              "2001:db8::1",
		"[2001:db8::1]":            "2001:db8::1",
		" 198.51.100.1 ":           "198.51.100.1",
		"[fe80::1%eth0]:80":        "fe80::1%eth0",
		"[::ffff:192.0.2.1]:12345": "::ffff:192.0.2.1",
	} {
		a, ok := ParseAddr(in)
		if !ok || a.String() != want {
			t.Errorf("ParseAddr(%q) = %v, %v; want %s", in, a, ok, want)
		}
	}
	for _, bad := range []string{"", "example.com:80", "unix:/tmp/sock", "1.2.3", "[::1", "@"} {
		if a, ok := ParseAddr(bad); ok {
			t.Errorf("ParseAddr(%q) = %v, want failure", bad, a)
		}
	}
}

func TestBound(t *testing.T) {
	short := "header:tenant-a"
	if got := Bound(short, 0); got != short {
		t.Errorf("Bound(short) = %q", got)
	}
	long := "header:" + strings.Repeat("x", 1000)
	got := Bound(long, 0)
	if len(got) > DefaultMaxLen || !strings.HasPrefix(got, "header:sha256:") {
		t.Errorf("Bound(long) = %q (%d bytes)", got, len(got))
	}
	if Bound(long+"y", 0) == got {
		t.Error("distinct long keys collide")
	}
	if got := Bound(strings.Repeat("z", 200), 100); len(got) > 100 || !strings.HasPrefix(got, "sha256:") {
		t.Errorf("Bound without namespace = %q", got)
	}
}

func TestPrefixes(t *testing.T) {
	ps, err := ParsePrefixes([]string{"10.0.0.0/8", "192.0.2.1", "2001:db8::/32", "::ffff:198.51.100.0/120"})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{
		"10.1.2.3":          true,
		"::ffff:10.1.2.3":   true,
		"192.0.2.1":         true,
		"192.0.2.2":         false,
		"2001:db8:ffff::1":  true,
		"2001:db9::1":       false,
		"203.0.113.1":       false,
		"fe80::1%eth0":      false,
		"2001:db8::1%wlan0": true,
	} {
		if got := ps.Contains(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Contains(%s) = %v, want %v", addr, got, want)
		}
	}
	if _, err := ParsePrefixes([]string{"10.0.0.0/8", "nonsense"}); err == nil || !strings.Contains(err.Error(), `"nonsense"`) {
		t.Errorf("ParsePrefixes(nonsense) = %v", err)
	}
	var none Prefixes
	if none.Contains(netip.MustParseAddr("127.0.0.1")) {
		t.Error("zero Prefixes trusts something")
	}
}

func FuzzParseAndKey(f *testing.F) {
	for _, s := range []string{"203.0.113.7:80", "[2001:db8::1]:443", "::ffff:1.2.3.4", "fe80::1%eth0", "", "\xff\xfe", "[::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := ParseAddr(s)
		if !ok {
			return
		}
		k := IP(a, 0)
		if !strings.HasPrefix(k, "ip:") || len(k) > 64 {
			t.Fatalf("IP(%v) = %q", a, k)
		}
		if IP(a.Unmap(), 0) != k {
			t.Fatalf("mapped and unmapped %v give different keys", a)
		}
		if got := fuzzKeys.Key(a); got != k { // a cache shared by all inputs: hits and collisions
			t.Fatalf("IPKeys.Key(%v) = %q, IP gives %q", a, got, k)
		}
	})
}

var fuzzKeys = NewIPKeys(0)

// IPKeys returns IP's keys, whether it remembers them or not, and builds a
// remembered key no more.
func TestIPKeys(t *testing.T) {
	addrs := []string{"203.0.113.7", "::ffff:203.0.113.7", "2001:db8:1:2:aaaa::1", "2001:db8:1:2:bbbb::9",
		"fe80::1%eth0", "fe80::1%eth1", "10.0.0.1", "::", "0.0.0.0"}
	for i := range 1024 { // more clients than slots: some share one
		addrs = append(addrs, netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)}).String())
	}
	for _, prefix := range []int{0, 48, 64, 128, 999} {
		c := NewIPKeys(prefix)
		for round := range 2 {
			for _, s := range addrs {
				a := netip.MustParseAddr(s)
				if got, want := c.Key(a), IP(a, prefix); got != want {
					t.Fatalf("round %d: NewIPKeys(%d).Key(%s) = %q, want %q", round, prefix, s, got, want)
				}
			}
		}
	}
	c := NewIPKeys(0)
	if got := c.Key(netip.Addr{}); got != "ip:invalid" {
		t.Errorf("Key(zero) = %q", got)
	}
	a := netip.MustParseAddr("2001:db8::1")
	c.Key(a)
	if n := testing.AllocsPerRun(100, func() { c.Key(a) }); n != 0 {
		t.Errorf("a remembered key allocates %v times", n)
	}
}

// Many goroutines share one IPKeys (run with -race).
func TestIPKeysConcurrent(t *testing.T) {
	c := NewIPKeys(0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				a := netip.AddrFrom4([4]byte{10, byte(g), byte(i >> 8), byte(i)})
				if got, want := c.Key(a), IP(a, 0); got != want {
					t.Errorf("Key(%v) = %q, want %q", a, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkIP(b *testing.B) {
	a := netip.MustParseAddr("203.0.113.7")
	b.Run("IP", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			IP(a, 0)
		}
	})
	b.Run("IPKeys", func(b *testing.B) {
		c := NewIPKeys(0)
		b.ReportAllocs()
		for b.Loop() {
			c.Key(a)
		}
	})
}

func TestBoundUnprintable(t *testing.T) {
	for _, k := range []string{"header:\xff", "header:a\x00b", "header:\u0085"} {
		if got := Bound(k, 0); !strings.HasPrefix(got, "header:sha256:") {
			t.Errorf("Bound(%q) = %q, want a digest", k, got)
		}
	}
	if Bound("header:\xff", 0) == Bound("header:\xfe", 0) {
		t.Error("distinct unprintable keys collide")
	}
	if got := Bound("\xff:x", 0); !strings.HasPrefix(got, "sha256:") {
		t.Errorf("unprintable namespace kept: %q", got)
	}
}

// printable agrees with a rune-by-rune definition (valid UTF-8, no C0 or
// C1 control character, no DEL) on every byte alone, after ASCII and
// before the rest, and on multi-byte runes.
func TestPrintableMatchesRunes(t *testing.T) {
	want := func(s string) bool {
		if !utf8.ValidString(s) {
			return false
		}
		for _, r := range s {
			if r < 0x20 || (r >= 0x7f && r < 0xa0) {
				return false
			}
		}
		return true
	}
	var cases []string
	for c := range 256 {
		b := string([]byte{byte(c)})
		cases = append(cases, b, "ip:1.2.3.4"+b, b+"ip:1.2.3.4", "ip:"+b+"é")
	}
	cases = append(cases, "", "spiffe://example.org/ns/é", "a\u0085b", "日本語", "a\u00a0b", "\xe6\x97")
	for _, s := range cases {
		if got := printable(s); got != want(s) {
			t.Errorf("printable(%q) = %v, want %v", s, got, want(s))
		}
	}
}

// The zero IPKeys groups IPv6 addresses as IP does by default.
func TestIPKeysZero(t *testing.T) {
	var c IPKeys
	for _, s := range []string{"203.0.113.7", "2001:db8:1:2:aaaa::1"} {
		a := netip.MustParseAddr(s)
		if got, want := c.Key(a), IP(a, 0); got != want {
			t.Errorf("zero IPKeys: Key(%s) = %q, want %q", s, got, want)
		}
	}
}

// Hostile input to the key helpers: huge, malformed, control-character and
// invalid-UTF-8 values never panic; Bound always returns a key within its
// limit that is printable and keeps distinct inputs distinct; ParseAddr
// refuses what is no address (a port it does not check: the host is what
// counts); ParsePrefixes names the bad entry.
func TestHostileInputs(t *testing.T) {
	huge := strings.Repeat("9", 1<<16)
	values := []string{huge, "ip:" + huge, "header:x:" + huge, "a\x00b\r\n", "\xff\xfe\xc3\x28", "", ":", "::::",
		strings.Repeat("[", 1000), "[" + huge + "]:80", "1.2.3.4:" + huge, "%" + huge}
	seen := map[string]string{}
	for _, v := range values {
		for _, maxLen := range []int{-1, 0, 79, 80, 128, 512} {
			k := Bound(v, maxLen)
			if limit := max(maxLen, 80); maxLen < 80 && len(k) > DefaultMaxLen || maxLen >= 80 && len(k) > limit || !printable(k) {
				t.Errorf("Bound(%.20q, %d) = %q: over the limit or unprintable", v, maxLen, k)
			}
			if prev, ok := seen[k]; ok && prev != v {
				t.Errorf("Bound maps %.20q and %.20q to %q", prev, v, k)
			}
			seen[k] = v
		}
		if a, ok := ParseAddr(v); ok && (!strings.HasPrefix(v, "1.2.3.4:") || a.String() != "1.2.3.4") {
			t.Errorf("ParseAddr(%.20q) = %v, want failure", v, a)
		}
	}
	if _, err := ParsePrefixes([]string{"10.0.0.0/8", "\xff/8"}); err == nil || !strings.Contains(err.Error(), `"\xff/8"`) {
		t.Errorf("ParsePrefixes with an invalid entry: %v", err)
	}
}

// FuzzBound: a bounded key is within its limit and printable, a key that
// is already both is kept, distinct keys stay distinct (a digest of the
// whole key), and bounding twice changes nothing.
func FuzzBound(f *testing.F) {
	f.Add("ip:203.0.113.7", 0)
	f.Add("header:x-tenant-id:"+strings.Repeat("a", 300), 128)
	f.Add("header:\xff", 80)
	f.Add("\x00:x", -5)
	f.Fuzz(func(t *testing.T, key string, maxLen int) {
		b := Bound(key, maxLen)
		limit := maxLen
		if limit < 80 {
			limit = DefaultMaxLen
		}
		if len(b) > limit || !printable(b) || Bound(b, maxLen) != b {
			t.Fatalf("Bound(%q, %d) = %q", key, maxLen, b)
		}
		if len(key) <= limit && printable(key) != (b == key) {
			t.Fatalf("Bound(%q, %d) = %q: a short printable key must be kept, no other", key, maxLen, b)
		}
		if b != key && Bound(key+"\x00", maxLen) == b {
			t.Fatalf("Bound maps %q and %q to %q", key, key+"\x00", b)
		}
	})
}

// FuzzParsePrefixes: a list either parses, and then contains each address
// it names, or fails naming its bad entry; Contains never panics.
func FuzzParsePrefixes(f *testing.F) {
	f.Add("10.0.0.0/8,192.0.2.1", "10.1.2.3")
	f.Add("2001:db8::/32, ::ffff:198.51.100.0/120", "198.51.100.7")
	f.Add("10.0.0.0/33,\xff", "")
	f.Fuzz(func(t *testing.T, list, addr string) {
		entries := strings.Split(list, ",")
		ps, err := ParsePrefixes(entries)
		if err != nil {
			if !strings.Contains(err.Error(), "clientkey: trusted prefix") {
				t.Fatalf("ParsePrefixes(%q): %v", entries, err)
			}
			return
		}
		for _, e := range entries {
			if a, err := netip.ParseAddr(strings.TrimSpace(e)); err == nil && !ps.Contains(a) {
				t.Fatalf("ParsePrefixes(%q) does not contain its entry %v", entries, a)
			}
		}
		if a, ok := ParseAddr(addr); ok {
			_ = ps.Contains(a)
		}
	})
}

// A digest with its namespace fits the limit too: with maxLen between 80
// and 87 a namespace of up to 16 bytes would not (found by FuzzBound).
func TestBoundDigestFitsLimit(t *testing.T) {
	for maxLen := 80; maxLen <= 90; maxLen++ {
		for _, key := range []string{"000000000:\xff", "sixteen-bytes-ns:\x00", "ns:" + strings.Repeat("x", 100)} {
			if got := Bound(key, maxLen); len(got) > maxLen {
				t.Errorf("Bound(%q, %d) = %q, %d bytes", key, maxLen, got, len(got))
			}
		}
	}
}

// Bad input: defaults and clear results, and the one documented panic (see
// "Errors and panics" in the package doc).
func TestBadInput(t *testing.T) {
	if k := IP(netip.Addr{}, -1); k != "ip:invalid" {
		t.Errorf("IP(invalid, -1) = %q", k)
	}
	if k := NewIPKeys(1 << 20).Key(netip.MustParseAddr("2001:db8::1")); k != "ip:2001:db8::/64" {
		t.Errorf("NewIPKeys(huge prefix).Key = %q", k)
	}
	if Cert(nil) != "" || Cert([][]*x509.Certificate{{}}) != "" {
		t.Error("Cert of no chain is not empty")
	}
	if k, err := First[int, func(int) (string, error)](0, errors.New("none"), []func(int) (string, error){nil}); err == nil || k != "" {
		t.Errorf("First of a nil source = %q, %v", k, err)
	}
	if ps, err := ParsePrefixes(nil); err != nil || len(ps) != 0 || ps.Contains(netip.MustParseAddr("10.0.0.1")) {
		t.Errorf("ParsePrefixes(nil) = %v, %v", ps, err)
	}
	if Prefixes(nil).Contains(netip.Addr{}) {
		t.Error("nil Prefixes contain the invalid address")
	}
	defer func() {
		if recover() == nil {
			t.Error("Key of a nil *IPKeys did not panic")
		}
	}()
	(*IPKeys)(nil).Key(netip.MustParseAddr("10.0.0.1"))
}
