// Package publicapi has no code, only tests of what an importer of
// fairseat sees: its exported API, and the Go code its docs show.
//
// TestAPI lists every exported name of the library packages (admission,
// criticality, httpmw, interceptors) with its type, a line each, and
// compares the list with testdata/api.txt. DESIGN.md fixes the names of
// the public API: they may be added to, never renamed or removed. A change
// of the list fails the test until testdata/api.txt is rewritten (go test
// ./internal/publicapi -run TestAPI -update), so that every change of the
// API shows in review as a change of that file; a removed or changed line
// breaks importers.
//
// TestSnippetsTypeCheck type-checks the Go code of the README and of the
// package docs against the library, so that a renamed option or a changed
// signature breaks a test instead of a newcomer's first build. A snippet
// is a fragment, not a program: it uses names it does not declare (a
// scheduler s, a context ctx, a handler), leaves errors unchecked with
// "{ ... }", and declares what it does not use. The test wraps each
// snippet in a function of its own, declares those free names once
// (freeNames, each with the type the snippet's reader is meant to assume),
// and reports every error but an unused variable or import, at the
// README's or doc.go's own line.
//
// Both read the packages as go vet does: the compiler's export data, which
// go list -export builds (load_test.go).
package publicapi
