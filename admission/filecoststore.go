package admission

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds of a [FileCostStore] file. Load refuses a larger file, or one
// that claims more entries, before it allocates for them; Save refuses to
// write one (it never writes a file Load would refuse).
const (
	MaxCostFileBytes   = 64 << 20
	MaxCostFileEntries = 1 << 20
)

// maxCostFileString bounds a job type or job ID in the file. Job IDs are at
// most MaxIdentifierLen bytes; type names are configuration.
const maxCostFileString = 4096

// The cost file's layout (see "Warm restarts" in the package doc).
const (
	costFileMagic   = "FAIRCOST"
	costFileVersion = 1
	costFileHeader  = 24 // magic, version, flags, entry count, body length
	costFileTrailer = 4  // CRC-32C
	costEntryMin    = 1 + 1 + 1 + 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FileCostStore returns a [CostStore] that keeps the estimates in the file
// at path, in the format the package doc describes ("Warm restarts"). Its
// Save writes path+".tmp", syncs it, renames it over path and syncs the
// directory, so a crash at any moment leaves either the previous file or
// the new one, never a mix; a temporary file a crash left behind is
// ignored by Load and overwritten by the next Save. A missing file loads
// as no estimates and no error (a first start); any other problem is an
// error and no estimate. The store is safe for concurrent use (its Saves
// take turns); one file should have one writer.
//
// It is a [CapacityStore] too: it keeps adaptive capacity's limit in a
// second file, path+".capacity", the limit in decimal and a newline,
// written as the estimates are. A missing file loads as none (0, nil); one
// that does not hold a limit of at least 1 is an error naming it.
func FileCostStore(path string) CostStore { return &fileCostStore{path: path} }

type fileCostStore struct {
	path string
	mu   sync.Mutex // one Save or SaveCapacity at a time: they share temporary files
	// beforeRename, if set, runs after the temporary file is written and
	// synced; an error ends Save there, as a crash would (tests).
	beforeRename func() error
}

// Load implements CostStore.
func (f *fileCostStore) Load(ctx context.Context) ([]CostEstimate, error) {
	if f.path == "" {
		return nil, errors.New("admission: FileCostStore: empty path")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := readCostFile(f.path, MaxCostFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ests, err := decodeCostFile(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadCostFile, f.path, err)
	}
	return ests, nil
}

// readCostFile reads the regular file at path, of at most limit bytes.
// (A FIFO or a device there would block the read, or never end it.)
func readCostFile(path string, limit int) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("admission: FileCostStore: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("admission: FileCostStore: %s is not a regular file (%v)", path, st.Mode().Type())
	}
	if st.Size() > int64(limit) {
		return nil, fmt.Errorf("%w: %s: %d bytes, above the limit of %d", ErrBadCostFile, path, st.Size(), limit)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("admission: FileCostStore: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, int64(limit)+1)) // the file may have grown since Stat
	if err != nil {
		return nil, fmt.Errorf("admission: FileCostStore: read %s: %w", path, err)
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%w: %s: above the limit of %d bytes", ErrBadCostFile, path, limit)
	}
	return data, nil
}

// Save implements CostStore.
func (f *fileCostStore) Save(ctx context.Context, ests []CostEstimate) error {
	if f.path == "" {
		return errors.New("admission: FileCostStore: empty path")
	}
	data, err := encodeCostFile(ests)
	if err != nil {
		return fmt.Errorf("admission: FileCostStore: %s: %w", f.path, err)
	}
	return f.replace(ctx, f.path, data)
}

// replace makes data the content of the file at path: it writes
// path+".tmp", syncs it, renames it over path and syncs the directory.
func (f *fileCostStore) replace(ctx context.Context, path string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := writeSynced(tmp, data); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("admission: FileCostStore: %w", err)
	}
	if f.beforeRename != nil {
		if err := f.beforeRename(); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil { // the previous file stays
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("admission: FileCostStore: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("admission: FileCostStore: %s is written but its directory was not synced: %w", path, err)
	}
	return nil
}

// maxCapacityFileBytes bounds the capacity file: a limit of up to 19
// digits and a newline.
const maxCapacityFileBytes = 20

// capacityPath is the capacity file's path, beside the cost file.
func (f *fileCostStore) capacityPath() string { return f.path + ".capacity" }

// LoadCapacity implements CapacityStore.
func (f *fileCostStore) LoadCapacity(ctx context.Context) (int, error) {
	if f.path == "" {
		return 0, errors.New("admission: FileCostStore: empty path")
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	path := f.capacityPath()
	data, err := readCostFile(path, maxCapacityFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, ok := decodeCapacity(data)
	if !ok {
		return 0, fmt.Errorf("%w: %s: want a limit of at least 1 in decimal and a newline, got %q", ErrBadCostFile, path, data)
	}
	return n, nil
}

// decodeCapacity reads a capacity file: a limit of at least 1 in decimal
// digits and a newline, and nothing else.
func decodeCapacity(data []byte) (int, bool) {
	digits, ok := strings.CutSuffix(string(data), "\n")
	if !ok || len(data) > maxCapacityFileBytes || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil && n >= 1
}

// encodeCapacity lays out limit as a capacity file.
func encodeCapacity(limit int) []byte {
	return append(strconv.AppendInt(nil, int64(limit), 10), '\n')
}

// SaveCapacity implements CapacityStore.
func (f *fileCostStore) SaveCapacity(ctx context.Context, limit int) error {
	if f.path == "" {
		return errors.New("admission: FileCostStore: empty path")
	}
	if limit < 1 {
		return fmt.Errorf("admission: FileCostStore: SaveCapacity(%d): want a limit of at least 1", limit)
	}
	return f.replace(ctx, f.capacityPath(), encodeCapacity(limit))
}

// writeSynced writes data to the file at path, replacing it, and syncs it.
func writeSynced(path string, data []byte) error {
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := fh.Write(data); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// syncDir makes a rename in dir durable. Windows cannot sync a directory
// (and does not need to).
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// encodeCostFile lays out ests as a version 1 cost file. It refuses what
// decodeCostFile would refuse.
func encodeCostFile(ests []CostEstimate) ([]byte, error) {
	if len(ests) > MaxCostFileEntries {
		return nil, fmt.Errorf("%d estimates, above the limit of %d", len(ests), MaxCostFileEntries)
	}
	buf := make([]byte, costFileHeader, costFileHeader+len(ests)*48+costFileTrailer)
	copy(buf, costFileMagic)
	binary.BigEndian.PutUint16(buf[8:], costFileVersion)
	binary.BigEndian.PutUint32(buf[12:], uint32(len(ests)))
	for i, e := range ests {
		switch {
		case e.Type == "" || len(e.Type) > maxCostFileString || len(e.JobID) > maxCostFileString:
			return nil, fmt.Errorf("estimate %d: job type must be 1 to %d bytes and job ID at most %d, got %d and %d",
				i, maxCostFileString, maxCostFileString, len(e.Type), len(e.JobID))
		case math.IsNaN(e.Seconds) || math.IsInf(e.Seconds, 0) || e.Seconds < 0:
			return nil, fmt.Errorf("estimate %d (%q, %q): Seconds must be a finite number >= 0, got %v", i, e.Type, e.JobID, e.Seconds)
		}
		buf = binary.AppendUvarint(buf, uint64(len(e.Type)))
		buf = append(buf, e.Type...)
		buf = binary.AppendUvarint(buf, uint64(len(e.JobID)))
		buf = append(buf, e.JobID...)
		buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(e.Seconds))
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.Observed.UnixNano()))
		if len(buf)+costFileTrailer > MaxCostFileBytes {
			return nil, fmt.Errorf("estimates above the limit of %d bytes", MaxCostFileBytes)
		}
	}
	binary.BigEndian.PutUint64(buf[16:], uint64(len(buf)-costFileHeader))
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli)), nil
}

// decodeCostFile parses a cost file. It returns every estimate or an error
// naming the first problem, never part of the list; it allocates for the
// entries only after the checksum matched, and never more than the data's
// length allows.
func decodeCostFile(data []byte) ([]CostEstimate, error) {
	if len(data) < costFileHeader+costFileTrailer {
		return nil, fmt.Errorf("truncated: %d bytes, shorter than header and checksum (%d)", len(data), costFileHeader+costFileTrailer)
	}
	if string(data[:8]) != costFileMagic {
		return nil, fmt.Errorf("not a fairseat cost file (magic %q, want %q)", data[:8], costFileMagic)
	}
	switch v := binary.BigEndian.Uint16(data[8:]); {
	case v > costFileVersion:
		return nil, fmt.Errorf("version %d is newer than this build reads (%d)", v, costFileVersion)
	case v < costFileVersion:
		return nil, fmt.Errorf("version %d does not exist", v)
	}
	if flags := binary.BigEndian.Uint16(data[10:]); flags != 0 {
		return nil, fmt.Errorf("unknown flags %#04x", flags)
	}
	count := binary.BigEndian.Uint32(data[12:])
	bodyLen := binary.BigEndian.Uint64(data[16:])
	if have := uint64(len(data) - costFileHeader - costFileTrailer); bodyLen != have {
		if bodyLen > have {
			return nil, fmt.Errorf("truncated: the header announces %d bytes of entries, the file holds %d", bodyLen, have)
		}
		return nil, fmt.Errorf("%d bytes after the announced end of the entries", have-bodyLen)
	}
	end := len(data) - costFileTrailer
	if stored, sum := binary.BigEndian.Uint32(data[end:]), crc32.Checksum(data[:end], castagnoli); stored != sum {
		return nil, fmt.Errorf("checksum mismatch (stored %#08x, computed %#08x)", stored, sum)
	}
	if count > MaxCostFileEntries || uint64(count) > bodyLen/costEntryMin {
		return nil, fmt.Errorf("%d entries announced, more than the limit (%d) or than %d bytes can hold", count, MaxCostFileEntries, bodyLen)
	}
	body := data[costFileHeader:end]
	ests := make([]CostEstimate, 0, count)
	for i := range count {
		var e CostEstimate
		var typ, id []byte
		var err error
		if typ, body, err = costFileString(body); err != nil {
			return nil, fmt.Errorf("entry %d: job type: %v", i, err)
		}
		if id, body, err = costFileString(body); err != nil {
			return nil, fmt.Errorf("entry %d: job ID: %v", i, err)
		}
		if len(typ) == 0 {
			return nil, fmt.Errorf("entry %d: empty job type", i)
		}
		if len(body) < 16 {
			return nil, fmt.Errorf("entry %d: truncated: %d bytes left, want 16", i, len(body))
		}
		e.Type, e.JobID = JobType(typ), string(id)
		e.Seconds = math.Float64frombits(binary.BigEndian.Uint64(body))
		e.Observed = time.Unix(0, int64(binary.BigEndian.Uint64(body[8:]))).UTC()
		body = body[16:]
		if math.IsNaN(e.Seconds) || math.IsInf(e.Seconds, 0) || e.Seconds < 0 {
			return nil, fmt.Errorf("entry %d (%q, %q): cost %v is not a finite number >= 0", i, e.Type, e.JobID, e.Seconds)
		}
		ests = append(ests, e)
	}
	if len(body) != 0 {
		return nil, fmt.Errorf("%d bytes after the last of %d entries", len(body), count)
	}
	return ests, nil
}

// costFileString reads a uvarint length and that many bytes from b.
func costFileString(b []byte) (s, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	switch {
	case k <= 0:
		return nil, nil, errors.New("bad length")
	case n > maxCostFileString:
		return nil, nil, fmt.Errorf("length %d above the limit of %d", n, maxCostFileString)
	case n > uint64(len(b)-k):
		return nil, nil, fmt.Errorf("length %d, only %d bytes left", n, len(b)-k)
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}
