// Package docsnippets has no code, only a test: the Go code the README and
// the library's package docs show a reader is type-checked against the
// library, so that a renamed option or a changed signature breaks a test
// instead of a newcomer's first build.
//
// A snippet is a fragment, not a program: it uses names it does not
// declare (a scheduler s, a context ctx, a handler), leaves errors
// unchecked with "{ ... }", and declares what it does not use. The test
// wraps each snippet in a function of its own, declares those free names
// once (freeNames in the test, each with the type the snippet's reader is
// meant to assume), and reports every error but an unused variable or
// import, at the README's or doc.go's own line.
package docsnippets
