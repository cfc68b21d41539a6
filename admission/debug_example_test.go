package admission_test

import (
	"context"
	"crypto/subtle"
	"net/http"

	"github.com/fairseat/fairseat/admission"
)

// The debug page shows fairness keys and job IDs: mount it only behind the
// operator's own access control, here HTTP Basic authentication (which a
// browser also sends with the page's own refresh requests) on an internal
// mux.
func ExampleDebugHandler() {
	s, err := admission.New(admission.Config{Capacity: 4})
	if err != nil {
		panic(err)
	}
	defer s.Close(context.Background())

	user, password := "operator", "from-the-operators-secret-store"
	debug := admission.DebugHandler(s)
	mux := http.NewServeMux()
	mux.Handle("/debug/admission", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user))&subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="admission debug"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		debug.ServeHTTP(w, r) // the page; ?format=json for the JSON
	}))
	_ = mux // serve it on an internal listener, as with net/http/pprof
}
