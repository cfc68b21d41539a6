package publicapi

import (
	"flag"
	"fmt"
	"go/token"
	"go/types"
	"os"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/api.txt from the packages (TestAPI)")

// apiPackages are the library's packages, whose exported API is fixed.
var apiPackages = []string{
	"github.com/fairseat/fairseat/admission",
	"github.com/fairseat/fairseat/criticality",
	"github.com/fairseat/fairseat/httpmw",
	"github.com/fairseat/fairseat/interceptors",
}

const apiFile = "testdata/api.txt"

func TestAPI(t *testing.T) {
	fset := token.NewFileSet()
	imp := importerFor(t, fset, apiPackages)
	var got []string
	for _, path := range apiPackages {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("importing %s: %v", path, err)
		}
		got = append(got, apiLines(pkg)...)
	}
	slices.Sort(got)

	if *update {
		if err := os.WriteFile(apiFile, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d lines to %s", len(got), apiFile)
		return
	}
	data, err := os.ReadFile(apiFile)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	want := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	removed, added := difference(want, got), difference(got, want)
	for _, l := range removed {
		t.Errorf("gone from the API (breaks importers; DESIGN.md: add, do not rename): %s", l)
	}
	for _, l := range added {
		t.Errorf("new in the API: %s", l)
	}
	if len(removed)+len(added) > 0 {
		t.Logf("if the change is meant, record it: go test ./internal/publicapi -run TestAPI -update")
	}
}

// apiLines lists pkg's exported names, a line each, as "pkg NAME, DECL":
// constants with their value, variables and functions with their type,
// each type with its underlying kind, then one line per exported field,
// interface method and method of the type or its pointer (promoted ones
// included). Unexported fields and methods are not API and are left out.
func apiLines(pkg *types.Package) []string {
	prefix := "pkg " + pkg.Name() + ", "
	qual := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Name()
	}
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, prefix+fmt.Sprintf(format, args...)) }
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			add("const %s %s = %s", name, types.TypeString(obj.Type(), qual), obj.Val().ExactString())
		case *types.Var:
			add("var %s %s", name, types.TypeString(obj.Type(), qual))
		case *types.Func:
			add("func %s%s", name, signature(obj.Signature(), qual))
		case *types.TypeName:
			lines = append(lines, typeLines(prefix, obj, qual)...)
		}
	}
	return lines
}

func typeLines(prefix string, obj *types.TypeName, qual types.Qualifier) []string {
	name := obj.Name()
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, prefix+fmt.Sprintf(format, args...)) }
	if obj.IsAlias() {
		add("type %s = %s", name, types.TypeString(obj.Type(), qual))
		return lines
	}
	switch u := obj.Type().Underlying().(type) {
	case *types.Struct:
		add("type %s struct", name)
		for f := range u.Fields() {
			if f.Exported() {
				add("type %s struct, %s %s", name, f.Name(), types.TypeString(f.Type(), qual))
			}
		}
	case *types.Interface:
		add("type %s interface", name)
		for m := range u.Methods() {
			if m.Exported() {
				add("type %s interface, %s%s", name, m.Name(), signature(m.Signature(), qual))
			}
		}
	default:
		add("type %s %s", name, types.TypeString(u, qual))
	}
	if _, ok := obj.Type().Underlying().(*types.Interface); ok {
		return lines
	}
	// A method of the value's own method set has a value receiver; the
	// pointer's set adds those with a pointer receiver.
	values := types.NewMethodSet(obj.Type())
	for sel := range types.NewMethodSet(types.NewPointer(obj.Type())).Methods() {
		m := sel.Obj().(*types.Func)
		if !m.Exported() {
			continue
		}
		recv := "*" + name
		if values.Lookup(m.Pkg(), m.Name()) != nil {
			recv = name
		}
		add("method (%s) %s%s", recv, m.Name(), signature(m.Signature(), qual))
	}
	return lines
}

// signature is sig's parameters and results without their names, which
// an importer does not see: "(string, ...int) (T, error)".
func signature(sig *types.Signature, qual types.Qualifier) string {
	list := func(t *types.Tuple, variadic bool) []string {
		var out []string
		for i := range t.Len() {
			typ := t.At(i).Type()
			if variadic && i == t.Len()-1 {
				out = append(out, "..."+types.TypeString(typ.(*types.Slice).Elem(), qual))
				continue
			}
			out = append(out, types.TypeString(typ, qual))
		}
		return out
	}
	b := "(" + strings.Join(list(sig.Params(), sig.Variadic()), ", ") + ")"
	switch res := list(sig.Results(), false); len(res) {
	case 0:
	case 1:
		b += " " + res[0]
	default:
		b += " (" + strings.Join(res, ", ") + ")"
	}
	return b
}

// difference returns the lines of a not in b.
func difference(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, l := range b {
		in[l] = true
	}
	var out []string
	for _, l := range a {
		if !in[l] {
			out = append(out, l)
		}
	}
	return out
}
