//go:build unix

package admission

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFileCostStoreFIFO: a named pipe at the path is refused at once; it is
// never opened (opening it would wait for a writer forever).
func TestFileCostStoreFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "costs")
	must(t, syscall.Mkfifo(path, 0o600))
	got, err := FileCostStore(path).Load(t.Context())
	if err == nil || got != nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Load of a FIFO = %v, %v; want an error", got, err)
	}
}

// TestFileCostStoreCapacityFIFO: the same for the capacity file.
func TestFileCostStoreCapacityFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "costs")
	must(t, syscall.Mkfifo(path+".capacity", 0o600))
	n, err := FileCostStore(path).(CapacityStore).LoadCapacity(t.Context())
	if err == nil || n != 0 || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("LoadCapacity of a FIFO = %d, %v; want an error", n, err)
	}
}
