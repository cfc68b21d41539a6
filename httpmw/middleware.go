package httpmw

import (
	"context"
	"fmt"
	"net/http"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/criticality"
	"github.com/fairseat/fairseat/internal/clientkey"
)

// router is what *http.ServeMux offers to look up a request's handler.
type router interface {
	Handler(*http.Request) (http.Handler, string)
}

// state travels in the request context from Middleware to Tag.
type state struct {
	s        *admission.Scheduler
	cfg      *config
	level    criticality.Level // the caller's, as believed
	admitted bool              // a seat is held for this request
}

type stateKey struct{}

// Middleware returns middleware that admits requests through s: routes
// wrapped in [Tag] (and, with [WithDefaultJobType], all other routes) wait
// for a seat before their handler runs. See the package doc. It panics if
// s is nil.
func Middleware(s *admission.Scheduler, opts ...Option) func(http.Handler) http.Handler {
	cfg := buildConfig(opts) // options first: their own panics name the option
	if s == nil {
		panic("httpmw: Middleware: nil *admission.Scheduler")
	}
	return func(next http.Handler) http.Handler {
		rt, _ := next.(router)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, lvl := cfg.criticality(r)
			if cfg.exempt != nil && cfg.exempt(r) {
				s.CountExempt()
				next.ServeHTTP(w, r.WithContext(ctx))
				return
			}
			st := &state{s: s, cfg: cfg, level: lvl}
			r = r.WithContext(context.WithValue(ctx, stateKey{}, st))
			if cfg.defaultType != "" && !tagged(rt, r) {
				st.admit(w, r, cfg.defaultType, cfg.defaultID, next)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// tagged reports whether the router will serve r with a Tag. Without a
// router nothing can be known in advance and the request counts as tagged,
// so it is never admitted twice.
func tagged(rt router, r *http.Request) bool {
	if rt == nil {
		return true
	}
	h, _ := rt.Handler(r)
	_, ok := h.(*taggedHandler)
	return ok
}

// Tag marks a route: its requests wait for a seat of jobType, working on the
// job ID jobID returns (nil: no job ID, so no conflicts), before h runs, and
// hold the seat until h returns. Tag must run inside [Middleware]; a request
// that reaches it without the middleware fails with 500, since the route
// cannot be protected. It panics if h is nil.
func Tag(jobType admission.JobType, jobID JobIDFunc, h http.Handler) http.Handler {
	if h == nil {
		panic(fmt.Sprintf("httpmw: Tag(%q): nil handler", jobType))
	}
	return &taggedHandler{typ: jobType, id: jobID, h: h}
}

type taggedHandler struct {
	typ admission.JobType
	id  JobIDFunc
	h   http.Handler
}

func (t *taggedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st, _ := r.Context().Value(stateKey{}).(*state)
	switch {
	case st == nil:
		http.Error(w, fmt.Sprintf("httpmw: route tagged %q is not behind httpmw.Middleware", t.typ), http.StatusInternalServerError)
	case st.admitted: // admitted under the default type by the look-ahead's miss
		t.h.ServeHTTP(w, r)
	default:
		st.admit(w, r, t.typ, t.id, t.h)
	}
}

// admit is the one admission path: derive the key and job ID, wait for a
// seat, run h holding it.
func (st *state) admit(w http.ResponseWriter, r *http.Request, typ admission.JobType, idf JobIDFunc, h http.Handler) {
	key, err := st.cfg.key(r)
	if err == nil && key == "" {
		// "" is the background jobs' key; a caller must not share it.
		err = ErrNoKey
	}
	if err != nil {
		st.cfg.reject(w, r, Rejection{Status: http.StatusBadRequest, Err: fmt.Errorf("httpmw: cannot identify the caller: %w", err)})
		return
	}
	var id string
	if idf != nil {
		if id, err = idf(r); err != nil {
			st.cfg.reject(w, r, Rejection{Status: http.StatusBadRequest, Err: err})
			return
		}
	}
	p, err := st.s.Acquire(r.Context(), admission.Request{Type: typ, JobID: id, FairnessKey: clientkey.Bound(key, st.cfg.maxKeyLen), PriorityOffset: st.cfg.crit.Offset(st.level)})
	if err != nil {
		if r.Context().Err() != nil {
			return // the client went away while queued: nobody to answer
		}
		st.cfg.reject(w, r, rejection(err))
		return
	}
	defer p.Release()
	st.admitted = true
	h.ServeHTTP(w, r)
}
