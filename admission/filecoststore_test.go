package admission

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sampleCosts are three estimates, one with an empty job ID.
func sampleCosts() []CostEstimate {
	at := time.Date(2030, 5, 6, 7, 8, 9, 123456789, time.UTC)
	return []CostEstimate{
		{Type: "clone", JobID: "github.com/torvalds/linux", Seconds: 61.25, Observed: at},
		{Type: "clone", JobID: "", Seconds: 0, Observed: at.Add(-time.Hour)},
		{Type: "repack", JobID: "github.com/golang/go", Seconds: 3600, Observed: at.Add(time.Nanosecond)},
	}
}

func equalCosts(a, b []CostEstimate) bool {
	return slices.EqualFunc(a, b, func(x, y CostEstimate) bool {
		return x.Type == y.Type && x.JobID == y.JobID && x.Seconds == y.Seconds && x.Observed.Equal(y.Observed)
	})
}

func wantCosts(t *testing.T, what string, got, want []CostEstimate) {
	t.Helper()
	if !equalCosts(got, want) {
		t.Fatalf("%s: got %+v\nwant %+v", what, got, want)
	}
}

// sealCostFile recomputes the body length and checksum of data (a header
// and a body, no trailer), so that a test can damage one field alone.
func sealCostFile(data []byte) []byte {
	out := slices.Clone(data)
	binary.BigEndian.PutUint64(out[16:], uint64(len(out)-costFileHeader))
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
}

func TestFileCostStoreRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "costs")
	st := FileCostStore(path)
	got, err := st.Load(t.Context())
	if err != nil || got != nil {
		t.Fatalf("Load of a missing file = %v, %v; want nothing, no error", got, err)
	}
	must(t, st.Save(t.Context(), sampleCosts()))
	got, err = st.Load(t.Context())
	must(t, err)
	wantCosts(t, "after Save", got, sampleCosts())
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v, %v; want 0600", fi.Mode(), err)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the temporary file is left after a successful Save: %v", err)
	}
	must(t, st.Save(t.Context(), nil)) // an empty list is a valid file
	got, err = st.Load(t.Context())
	if err != nil || len(got) != 0 {
		t.Fatalf("Load after saving nothing = %v, %v", got, err)
	}
}

// TestFileCostStoreDamaged: a file truncated at any byte, with any byte
// flipped, or with a wrong magic, version or flags is refused whole, with
// an error naming the problem.
func TestFileCostStoreDamaged(t *testing.T) {
	good, err := encodeCostFile(sampleCosts())
	must(t, err)
	path := filepath.Join(t.TempDir(), "costs")
	st := FileCostStore(path)
	load := func(data []byte) ([]CostEstimate, error) {
		t.Helper()
		must(t, os.WriteFile(path, data, 0o600))
		return st.Load(t.Context())
	}
	refused := func(what string, data []byte, msg string) {
		t.Helper()
		got, err := load(data)
		if !errors.Is(err, ErrBadCostFile) || got != nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), path) {
			t.Fatalf("%s: Load = %d estimates, %v; want none and an ErrBadCostFile naming the path and %q", what, len(got), err, msg)
		}
	}
	for n := range len(good) {
		refused("truncated to "+strconv.Itoa(n), good[:n], "")
	}
	for i := range good {
		bad := slices.Clone(good)
		bad[i] ^= 0xff
		refused("byte "+strconv.Itoa(i)+" flipped", bad, "")
		bad[i] ^= 0x01 ^ 0xff // a single-bit flip
		refused("bit 0 of byte "+strconv.Itoa(i)+" flipped", bad, "")
	}
	refused("one byte more", append(slices.Clone(good), 0), "after the announced end")

	body := good[:len(good)-costFileTrailer]
	withField := func(off int, put func([]byte)) []byte {
		b := slices.Clone(body)
		put(b[off:])
		return sealCostFile(b)
	}
	refused("wrong magic", withField(0, func(b []byte) { copy(b, "NOTCOSTS") }), `magic "NOTCOSTS"`)
	refused("future version", withField(8, func(b []byte) { binary.BigEndian.PutUint16(b, 2) }), "version 2 is newer")
	refused("version 0", withField(8, func(b []byte) { binary.BigEndian.PutUint16(b, 0) }), "version 0")
	refused("flags", withField(10, func(b []byte) { binary.BigEndian.PutUint16(b, 1) }), "flags")
	refused("more entries announced", withField(12, func(b []byte) { binary.BigEndian.PutUint32(b, 4) }), "entry 3")
	refused("fewer entries announced", withField(12, func(b []byte) { binary.BigEndian.PutUint32(b, 2) }), "after the last of 2 entries")
	refused("entries over the limit", withField(12, func(b []byte) { binary.BigEndian.PutUint32(b, MaxCostFileEntries+1) }), "entries announced")

	// Checksummed but invalid entries: a NaN cost, an empty type.
	nan := sealCostFile(slices.Concat(good[:costFileHeader],
		[]byte{1, 'c', 0}, binary.BigEndian.AppendUint64(nil, math.Float64bits(math.NaN())), make([]byte, 8)))
	binary.BigEndian.PutUint32(nan[12:], 1)
	refused("NaN cost", sealCostFile(nan[:len(nan)-costFileTrailer]), "not a finite number")
	empty := sealCostFile(slices.Concat(good[:costFileHeader], []byte{0, 0}, make([]byte, 17)))
	binary.BigEndian.PutUint32(empty[12:], 1)
	refused("empty type", sealCostFile(empty[:len(empty)-costFileTrailer]), "empty job type")

	// Too large: refused from its size, before it is read (a sparse file).
	must(t, os.WriteFile(path, nil, 0o600))
	must(t, os.Truncate(path, MaxCostFileBytes+1))
	if _, err := st.Load(t.Context()); !errors.Is(err, ErrBadCostFile) || !strings.Contains(err.Error(), "above the limit") {
		t.Fatalf("Load of a file over MaxCostFileBytes: %v", err)
	}
}

// TestFileCostStoreUnreadable: paths that cannot be read as a file are
// errors (not ErrBadCostFile: the file may be fine), never a hang or a
// panic.
func TestFileCostStoreUnreadable(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "plain")
	must(t, os.WriteFile(notDir, []byte("x"), 0o600))
	for _, c := range []struct{ name, path, msg string }{
		{"a directory", dir, "not a regular file"},
		{"below a regular file", filepath.Join(notDir, "costs"), "not a directory"},
		{"empty path", "", "empty path"},
	} {
		got, err := FileCostStore(c.path).Load(t.Context())
		if err == nil || got != nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: Load = %v, %v; want an error saying %q", c.name, got, err, c.msg)
		}
		if err := FileCostStore(c.path).Save(t.Context(), sampleCosts()); err == nil {
			t.Errorf("%s: Save succeeded", c.name)
		}
	}
}

// TestFileCostStoreCrashMidSave: a Save that stops before its rename (a
// crash) leaves the previous file intact and loadable, whatever it left in
// the temporary file, and the next Save replaces both.
func TestFileCostStoreCrashMidSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "costs")
	old := sampleCosts()[:1]
	must(t, FileCostStore(path).Save(t.Context(), old))

	errCrash := errors.New("crash")
	crashing := &fileCostStore{path: path, beforeRename: func() error { return errCrash }}
	if err := crashing.Save(t.Context(), sampleCosts()); !errors.Is(err, errCrash) {
		t.Fatalf("the crashing Save returned %v", err)
	}
	if _, err := os.Stat(path + ".tmp"); err != nil {
		t.Fatalf("the crash left no temporary file: %v", err)
	}
	got, err := FileCostStore(path).Load(t.Context())
	must(t, err)
	wantCosts(t, "after a crash before the rename", got, old)

	// Whatever part of the new file the crash wrote, the old one loads.
	next, err := encodeCostFile(sampleCosts())
	must(t, err)
	for n := range len(next) + 1 {
		must(t, os.WriteFile(path+".tmp", next[:n], 0o600))
		got, err := FileCostStore(path).Load(t.Context())
		must(t, err)
		wantCosts(t, "temporary file of "+strconv.Itoa(n)+" bytes", got, old)
	}

	// The scheduler starts warm from the previous file.
	s, logs := newStoreScheduler(t, Config{Capacity: 1}, FileCostStore(path), time.Hour)
	wantStoreCounters(t, s, 1, 0, 0, 0, 0)
	if logs.String() != "" {
		t.Fatalf("log: %s", logs)
	}
	must(t, s.Close(t.Context())) // saves: replaces the file and consumes the temporary one
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the temporary file outlived the next Save: %v", err)
	}
	got, err = FileCostStore(path).Load(t.Context())
	must(t, err)
	if len(got) != 1 || got[0].JobID != old[0].JobID {
		t.Fatalf("after the next Save: %+v", got)
	}
}

// TestFileCostStoreSaveRefuses: Save never writes what Load would refuse,
// and a cancelled Save leaves the previous file.
func TestFileCostStoreSaveRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "costs")
	st := FileCostStore(path)
	must(t, st.Save(t.Context(), sampleCosts()))
	for _, bad := range []CostEstimate{
		{Type: "", JobID: "x", Seconds: 1, Observed: time.Now()},
		{Type: JobType(strings.Repeat("t", maxCostFileString+1)), Seconds: 1, Observed: time.Now()},
		{Type: "clone", JobID: strings.Repeat("i", maxCostFileString+1), Seconds: 1, Observed: time.Now()},
		{Type: "clone", Seconds: math.Inf(1), Observed: time.Now()},
		{Type: "clone", Seconds: -1, Observed: time.Now()},
	} {
		if err := st.Save(t.Context(), []CostEstimate{bad}); err == nil {
			t.Errorf("Save of %.40v succeeded", bad)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := st.Save(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Save with a cancelled context: %v", err)
	}
	got, err := st.Load(t.Context())
	must(t, err)
	wantCosts(t, "after refused saves", got, sampleCosts())
}

// TestCostStoreDamagedFileStartsCold: through the scheduler, each damaged
// file (truncated at every byte, every byte flipped, a future version, an
// unreadable path) starts cold, with a warning and a count, never a panic.
func TestCostStoreDamagedFileStartsCold(t *testing.T) {
	good, err := encodeCostFile(sampleCosts())
	must(t, err)
	dir := t.TempDir()
	path := filepath.Join(dir, "costs")
	future := slices.Clone(good[:len(good)-costFileTrailer])
	binary.BigEndian.PutUint16(future[8:], 2)
	cases := map[string][]byte{"future version": sealCostFile(future)}
	for n := range len(good) {
		cases["truncated to "+strconv.Itoa(n)] = good[:n]
	}
	for i := range good {
		bad := slices.Clone(good)
		bad[i] ^= 0x55
		cases["byte "+strconv.Itoa(i)+" flipped"] = bad
	}
	startsCold := func(what, p string) {
		t.Helper()
		logs := &logBuffer{}
		s, err := New(Config{Capacity: 1}, WithLogger(logs.logger()), WithCostStore(FileCostStore(p), time.Hour))
		if err != nil {
			t.Fatalf("%s: New failed: %v", what, err)
		}
		must(t, s.RegisterType("clone", cloneType))
		snap := s.Snapshot()
		if c := snap.Counters; c.CostLoadFailures != 1 || c.CostEntriesLoaded != 0 || snap.CostStore.Aside != 0 || typeSnap(t, snap, "clone").LearnedCosts != 0 {
			t.Fatalf("%s: not a cold start: counters %+v, store %+v", what, c, snap.CostStore)
		}
		if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "cost store load failed") {
			t.Fatalf("%s: no warning; log: %q", what, l)
		}
		must(t, s.Close(t.Context()))
	}
	for what, data := range cases {
		must(t, os.WriteFile(path, data, 0o600))
		startsCold(what, path)
	}
	startsCold("a directory", dir)
}

// FuzzCostFile: the decoder never panics, and what it accepts encodes back
// to the same estimates. The fuzzer's bytes are tried as a whole file and,
// to get past the checksum, as the body of a sealed file of n entries.
func FuzzCostFile(f *testing.F) {
	good, err := encodeCostFile(sampleCosts())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, uint16(3))
	f.Add(good[costFileHeader:len(good)-costFileTrailer], uint16(3))
	f.Add([]byte{}, uint16(0))
	f.Add([]byte{1, 'c', 0, 0x40, 0x4e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, n uint16) {
		check := func(file []byte) {
			ests, err := decodeCostFile(file)
			if err != nil {
				if ests != nil {
					t.Fatalf("an error (%v) and %d estimates", err, len(ests))
				}
				return
			}
			again, err := encodeCostFile(ests)
			if err != nil {
				t.Fatalf("decoded estimates do not encode: %v", err)
			}
			back, err := decodeCostFile(again)
			if err != nil || !equalCosts(back, ests) {
				t.Fatalf("round trip: %+v, %v; want %+v", back, err, ests)
			}
		}
		check(data)
		header := make([]byte, costFileHeader, costFileHeader+len(data))
		copy(header, costFileMagic)
		binary.BigEndian.PutUint16(header[8:], costFileVersion)
		binary.BigEndian.PutUint32(header[12:], uint32(n))
		check(sealCostFile(append(header, data...)))
	})
}

// TestFileCostStoreCapacity: the limit round-trips through path+".capacity";
// a missing file is none; a file that holds anything but a limit of at
// least 1 in decimal and a newline is refused, naming the file; and
// SaveCapacity refuses a limit under 1.
func TestFileCostStoreCapacity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "costs")
	st := FileCostStore(path).(CapacityStore)
	if n, err := st.LoadCapacity(t.Context()); n != 0 || err != nil {
		t.Fatalf("LoadCapacity of a missing file = %d, %v; want 0, nil", n, err)
	}
	must(t, st.SaveCapacity(t.Context(), 18))
	if n, err := st.LoadCapacity(t.Context()); n != 18 || err != nil {
		t.Fatalf("LoadCapacity after SaveCapacity(18) = %d, %v", n, err)
	}
	if data, err := os.ReadFile(path + ".capacity"); err != nil || string(data) != "18\n" {
		t.Fatalf("capacity file holds %q, %v; want \"18\\n\"", data, err)
	}
	if _, err := os.Stat(path + ".capacity.tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the temporary file is left after a successful SaveCapacity: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("SaveCapacity wrote the estimates' file: %v", err)
	}
	for _, bad := range []string{"", "\n", "0\n", "-3\n", "+5\n", "18", "18\n\n", " 18\n", "eighteen\n", "1e3\n",
		"99999999999999999999\n", strings.Repeat("1", 1<<20) + "\n"} {
		must(t, os.WriteFile(path+".capacity", []byte(bad), 0o600))
		n, err := st.LoadCapacity(t.Context())
		if n != 0 || !errors.Is(err, ErrBadCostFile) || !strings.Contains(err.Error(), path+".capacity") {
			t.Fatalf("LoadCapacity of %.30q = %d, %v; want 0 and ErrBadCostFile naming the file", bad, n, err)
		}
	}
	for _, limit := range []int{0, -1} {
		if err := st.SaveCapacity(t.Context(), limit); err == nil || !strings.Contains(err.Error(), "at least 1") {
			t.Fatalf("SaveCapacity(%d) = %v, want an error", limit, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := st.LoadCapacity(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("LoadCapacity with a cancelled context = %v", err)
	}
	if err := st.SaveCapacity(ctx, 5); !errors.Is(err, context.Canceled) {
		t.Fatalf("SaveCapacity with a cancelled context = %v", err)
	}
	empty := FileCostStore("").(CapacityStore)
	if _, err := empty.LoadCapacity(t.Context()); err == nil {
		t.Fatal("LoadCapacity with an empty path: no error")
	}
	if err := empty.SaveCapacity(t.Context(), 5); err == nil {
		t.Fatal("SaveCapacity with an empty path: no error")
	}
}

// FuzzCapacityFile: decodeCapacity accepts exactly a limit of 1 to
// MaxInt64 in decimal digits (leading zeros allowed) and a newline, in at
// most 20 bytes, and what it accepts encodes back to the same limit.
func FuzzCapacityFile(f *testing.F) {
	for _, seed := range []string{"18\n", "0\n", "007\n", "+5\n", "-1\n", "18", "", "\n", "99999999999999999999\n", "1 \n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, ok := decodeCapacity(data)
		body, nl := strings.CutSuffix(string(data), "\n")
		digits := body != "" && strings.IndexFunc(body, func(r rune) bool { return r < '0' || r > '9' }) < 0
		v, err := strconv.ParseUint(body, 10, 63)
		want := nl && digits && len(data) <= 20 && err == nil && v >= 1
		if ok != want || ok && uint64(n) != v {
			t.Fatalf("decodeCapacity(%q) = %d, %v; want %v (%d)", data, n, ok, want, v)
		}
		if ok {
			if back, ok := decodeCapacity(encodeCapacity(n)); !ok || back != n {
				t.Fatalf("round trip of %d: %d, %v", n, back, ok)
			}
		}
	})
}
