package interceptors

import (
	"strings"
	"testing"
)

func TestRouteLookup(t *testing.T) {
	rs := Routes{
		"/git.v1.Git/Clone": {Type: "clone"},
		"/git.v1.Git/*":     {Type: "git"},
		"/a.B/*":            {Type: "ab"},
	}
	fallback := &Route{Type: "default"}
	for _, tc := range []struct {
		method         string
		want, wantNoFb string // "" = pass through
	}{
		{"/git.v1.Git/Clone", "clone", "clone"}, // the method's own route wins
		{"/git.v1.Git/Fetch", "git", "git"},
		{"/git.v1.Git2/Fetch", "default", ""},
		{"/git.v1.Gi/Fetch", "default", ""},
		{"/a.B/C", "ab", "ab"},
		{"/a.B", "default", ""},
		{"", "default", ""},
		{"/", "default", ""},
	} {
		for _, fb := range []*Route{fallback, nil} {
			tbl := compileRoutes(rs, fb)
			want := tc.want
			if fb == nil {
				want = tc.wantNoFb
			}
			got := ""
			if r := tbl.lookup(tc.method); r != nil {
				got = string(r.Type)
			}
			if got != want {
				t.Errorf("lookup(%q) with fallback %v = %q, want %q", tc.method, fb != nil, got, want)
			}
		}
	}
}

func TestRoutePatternsAreChecked(t *testing.T) {
	for _, p := range []string{"", "/", "git.v1.Git/Clone", "/git.v1.Git", "/git.v1.Git/", "//Clone", "/git.v1.Git/Clone/x", "/git.v1.Git/*/x"} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "route pattern") {
					t.Errorf("pattern %q: recovered %v, want a panic naming the bad pattern", p, r)
				}
			}()
			compileRoutes(Routes{p: {}}, nil)
		}()
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("an invalid StreamMode did not panic")
		}
	}()
	compileRoutes(Routes{"/a.B/C": {Stream: StreamMode(7)}}, nil)
}

func TestMatchMethods(t *testing.T) {
	m := MatchMethods("/grpc.reflection.v1.ServerReflection/*", "/a.B/C")
	for method, want := range map[string]bool{
		"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo": true,
		"/a.B/C":            true,
		"/a.B/D":            false,
		"/git.v1.Git/Clone": false,
	} {
		if got := m(t.Context(), method); got != want {
			t.Errorf("match %q = %v, want %v", method, got, want)
		}
	}
}

// Route lookup happens on every call: it must not allocate.
func TestRouteLookupDoesNotAllocate(t *testing.T) {
	tbl := compileRoutes(Routes{"/git.v1.Git/Clone": {}, "/other.v1.Other/*": {}}, nil)
	if n := testing.AllocsPerRun(100, func() {
		tbl.lookup("/git.v1.Git/Clone")
		tbl.lookup("/other.v1.Other/Ping")
		tbl.lookup("/unrouted.v1.U/M")
	}); n != 0 {
		t.Errorf("lookup allocates %v times", n)
	}
}
