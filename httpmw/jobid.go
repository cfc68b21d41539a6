package httpmw

import (
	"fmt"
	"net/http"
)

// A JobIDFunc returns the job ID of a request: the resource it works on
// (a repository, a bucket). An error rejects the request with 400.
type JobIDFunc func(*http.Request) (string, error)

// PathValue takes the job ID from a wildcard of the route's pattern, as
// r.PathValue(name) returns it ("POST /repos/{repo}/clone").
func PathValue(name string) JobIDFunc {
	return func(r *http.Request) (string, error) {
		if v := r.PathValue(name); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("httpmw: job ID: path value {%s} is empty or not in the route's pattern", name)
	}
}

// Header takes the job ID from a request header.
func Header(name string) JobIDFunc {
	return func(r *http.Request) (string, error) {
		if v := r.Header.Get(name); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("httpmw: job ID: header %s is missing or empty", name)
	}
}

// Query takes the job ID from a URL query parameter.
func Query(name string) JobIDFunc {
	return func(r *http.Request) (string, error) {
		if v := r.URL.Query().Get(name); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("httpmw: job ID: query parameter %q is missing or empty", name)
	}
}
