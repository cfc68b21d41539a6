package publicapi

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The documents whose Go code is checked, from the repository's root. A
// README shows Go in ```go fences; a package doc in blocks indented by a
// tab, which are Go only if they call into a package (goSelector): the
// admission doc's other blocks are formulas, a file layout and a table.
var (
	markdownDocs = []string{"README.md"}
	packageDocs  = []string{
		"admission/doc.go",
		"criticality/doc.go",
		"httpmw/doc.go",
		"interceptors/doc.go",
	}
)

// imports are the packages a snippet may use, each imported by every
// snippet (an unused one is not an error here).
var imports = []string{
	"context",
	"errors",
	"net/http",
	"net/netip",
	"time",
	"google.golang.org/grpc",
	"github.com/fairseat/fairseat/admission",
	"github.com/fairseat/fairseat/criticality",
	"github.com/fairseat/fairseat/httpmw",
	"github.com/fairseat/fairseat/interceptors",
}

// freeNames declares what the snippets use and do not declare, as their
// reader is meant to read it.
const freeNames = `
var (
	ctx      context.Context
	s, sched *admission.Scheduler
	cfg      admission.Config

	repo, clientIP string
	clone          func(ctx context.Context, repo string) error
	repack         func(ctx context.Context) error

	mux             *http.ServeMux
	cloneHandler    http.Handler
	health          func(http.ResponseWriter, *http.Request)
	loadBalancers   []netip.Prefix
	requireOperator func(http.Handler) http.Handler

	target, backendB string
	creds            grpc.DialOption
)
`

var goSelector = regexp.MustCompile(`\b(admission|criticality|httpmw|interceptors|grpc|http)\.[A-Z]`)

// A snippet is a block of Go code and where it starts.
type snippet struct {
	file string // from the repository's root
	line int    // of the snippet's first line
	code string
}

func TestSnippetsTypeCheck(t *testing.T) {
	root := repoRoot(t)
	var snippets []snippet
	for _, name := range markdownDocs {
		snippets = append(snippets, fenced(t, root, name)...)
	}
	fromMarkdown := len(snippets)
	perDoc := map[string]int{}
	for _, name := range packageDocs {
		for _, sn := range indented(t, root, name) {
			if goSelector.MatchString(sn.code) {
				snippets = append(snippets, sn)
				perDoc[name]++
			}
		}
	}
	// The selection of package doc blocks is a heuristic: make sure it
	// still finds the snippets the docs are known to show.
	for _, name := range []string{"httpmw/doc.go", "interceptors/doc.go"} {
		if perDoc[name] == 0 {
			t.Errorf("no Go snippet found in %s; it shows wiring code", name)
		}
	}

	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "snippets.go", source(snippets), parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("the snippets do not parse:\n%v", err)
	}
	var hard []string
	conf := types.Config{
		Importer: importerFor(t, fset, imports),
		Error: func(err error) {
			te := err.(types.Error)
			if te.Soft && (strings.Contains(te.Msg, "declared and not used") || strings.Contains(te.Msg, "imported and not used")) {
				return // a fragment need not use what it declares
			}
			hard = append(hard, fmt.Sprintf("%s: %s", fset.Position(te.Pos), te.Msg))
		},
	}
	conf.Check("snippets", fset, []*ast.File{file}, nil) // errors go to conf.Error
	for _, e := range hard {
		t.Error(e)
	}
	t.Logf("%d snippets checked (%d from package docs)", len(snippets), len(snippets)-fromMarkdown)
}

// source is a Go file with one function per snippet, each preceded by a
// line directive so that errors name the document's own file and line.
func source(snippets []snippet) string {
	var b strings.Builder
	b.WriteString("package snippets\n\nimport (\n")
	for _, p := range imports {
		fmt.Fprintf(&b, "\t%q\n", p)
	}
	b.WriteString(")\n")
	b.WriteString(freeNames)
	for i, sn := range snippets {
		fmt.Fprintf(&b, "\nfunc snippet%d() {\n//line %s:%d\n%s\n}\n", i, sn.file, sn.line, sn.code)
	}
	return b.String()
}

// elided is how a snippet leaves out error handling: "if err != nil { ... }".
var elided = regexp.MustCompile(`\{\s*\.\.\.\s*\}`)

// code turns a snippet's lines into a function body: an import line (the
// quick start's) becomes blank, keeping the lines in place, and "{ ... }"
// an empty block.
func code(lines []string) string {
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "import ") {
			lines[i] = ""
		}
	}
	return elided.ReplaceAllString(strings.Join(lines, "\n"), "{}")
}

// fenced returns the ```go blocks of a Markdown file.
func fenced(t *testing.T, root, name string) []snippet {
	var out []snippet
	var cur *snippet
	var lines []string
	eachLine(t, root, name, func(n int, l string) {
		switch {
		case cur == nil && strings.TrimSpace(l) == "```go":
			cur, lines = &snippet{file: name, line: n + 1}, nil
		case cur != nil && strings.TrimSpace(l) == "```":
			cur.code = code(lines)
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			lines = append(lines, l)
		}
	})
	if cur != nil {
		t.Fatalf("%s:%d: a ```go block is never closed", name, cur.line-1)
	}
	return out
}

// indented returns the code blocks of a Go file's comments: runs of "//"
// lines indented by a tab (gofmt's form of a doc comment's code block).
func indented(t *testing.T, root, name string) []snippet {
	var out []snippet
	var cur *snippet
	var lines []string
	flush := func() {
		if cur != nil {
			cur.code = code(lines)
			out = append(out, *cur)
			cur = nil
		}
	}
	eachLine(t, root, name, func(n int, l string) {
		body, ok := strings.CutPrefix(l, "//\t")
		if !ok {
			flush()
			return
		}
		if cur == nil {
			cur, lines = &snippet{file: name, line: n}, nil
		}
		lines = append(lines, body)
	})
	flush()
	return out
}

func eachLine(t *testing.T, root, name string, f func(n int, line string)) {
	t.Helper()
	file, err := os.Open(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for n := 1; sc.Scan(); n++ {
		f(n, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
}
