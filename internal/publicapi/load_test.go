package publicapi

import (
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository's root, from this package's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// importerFor returns an importer of pkgs and everything they depend on.
// It asks the go command for their compiled export data, as go vet and
// gopls do, rather than type-checking gRPC and OpenTelemetry from source.
func importerFor(t *testing.T, fset *token.FileSet, pkgs []string) types.Importer {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot(t)
	cmd.Stderr = new(strings.Builder)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, cmd.Stderr)
	}
	files := map[string]string{}
	for line := range strings.Lines(string(out)) {
		path, export, _ := strings.Cut(strings.TrimSpace(line), "\t")
		files[path] = export
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := files[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %q: not among the dependencies of %v", path, pkgs)
		}
		return os.Open(f)
	})
}
