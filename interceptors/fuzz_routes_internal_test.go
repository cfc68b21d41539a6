package interceptors

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// FuzzRoutes compiles a route pattern and looks methods up: a pattern that
// splitMethod refuses panics (the documented programming error), any other
// compiles; a method routes to its own pattern, a service pattern routes
// the service's methods, and lookup never panics.
func FuzzRoutes(f *testing.F) {
	f.Add("/git.v1.Git/Clone", "/git.v1.Git/Clone")
	f.Add("/git.v1.Git/*", "/git.v1.Git/Fetch")
	f.Add("git.v1.Git/Clone", "")
	f.Add("/a/b/c", "/a/b")
	f.Add("/\xff/\x00", "//")
	f.Fuzz(func(t *testing.T, pattern, method string) {
		svc, m, ok := splitMethod(pattern)
		var tbl routeTable
		panicked := func() (p bool) {
			defer func() { p = recover() != nil }()
			tbl = compileRoutes(Routes{pattern: {Type: "t"}}, nil)
			return false
		}()
		if panicked == ok {
			t.Fatalf("pattern %q: splitMethod ok %v, compile panicked %v", pattern, ok, panicked)
		}
		if !ok {
			return
		}
		_ = tbl.lookup(method)
		if m != "*" && tbl.lookup(pattern) == nil {
			t.Fatalf("method pattern %q does not route itself", pattern)
		}
		if m == "*" && !strings.Contains(method, "/") && tbl.lookup("/"+svc+"/"+method) == nil && method != "" {
			t.Fatalf("service pattern %q does not route method %q", pattern, method)
		}
	})
}

// FuzzMetadataValue reads a job ID from arbitrary metadata: one non-empty
// value is the job ID, anything else is InvalidArgument; nothing panics.
func FuzzMetadataValue(f *testing.F) {
	f.Add("x-repo", "linux", "", false)
	f.Add("X-Repo", "", "", false)
	f.Add("x-repo", "a", "b", true)
	f.Add("x-repo", "\xff\x00", "", false)
	f.Fuzz(func(t *testing.T, key, v1, v2 string, twice bool) {
		vs := []string{v1}
		if twice {
			vs = append(vs, v2)
		}
		ctx := metadata.NewIncomingContext(context.Background(), metadata.MD{strings.ToLower(key): vs})
		id, err := MetadataValue(key)(ctx, nil)
		switch {
		case len(vs) == 1 && v1 != "":
			if err != nil || id != v1 {
				t.Fatalf("MetadataValue(%q) of %q = %q, %v", key, v1, id, err)
			}
		case status.Code(err) != codes.InvalidArgument:
			t.Fatalf("MetadataValue(%q) of %q = %q, %v; want InvalidArgument", key, vs, id, err)
		}
	})
}
