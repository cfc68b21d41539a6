package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/examples/internal/gitcache"
	"github.com/fairseat/fairseat/httpmw"
)

// gitCache simulates a git cache. Clone and fetch are foreground requests,
// admitted by the middleware before these handlers run. Repack is
// background maintenance: the handler only queues it with the scheduler.
type gitCache struct {
	sched *admission.Scheduler
	work  gitcache.WorkFunc
}

// routes registers the API on mux. A route wrapped in httpmw.Tag waits for
// a seat; its job ID, the repository, is the {repo...} path wildcard.
func (g *gitCache) routes(mux *http.ServeMux) {
	mux.Handle("GET /clone/{repo...}", httpmw.Tag(gitcache.Clone, httpmw.PathValue("repo"), http.HandlerFunc(g.clone)))
	mux.Handle("GET /fetch/{repo...}", httpmw.Tag(gitcache.Fetch, httpmw.PathValue("repo"), http.HandlerFunc(g.fetch)))
	// Not tagged: the request only queues a background job.
	mux.HandleFunc("POST /repack/{repo...}", g.repack)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
}

func (g *gitCache) clone(w http.ResponseWriter, r *http.Request) {
	repo := r.PathValue("repo")
	if err := g.work(r.Context(), "clone", repo); err != nil {
		workFailed(w, r, err)
		return
	}
	fmt.Fprintf(w, "cloned %s\n", repo)
}

// fetch streams three progress lines, holding its seat throughout.
func (g *gitCache) fetch(w http.ResponseWriter, r *http.Request) {
	repo := r.PathValue("repo")
	rc := http.NewResponseController(w)
	for i := 1; i <= 3; i++ {
		if err := g.work(r.Context(), "fetch", repo); err != nil {
			workFailed(w, r, err)
			return
		}
		fmt.Fprintf(w, "fetched %s: part %d/3\n", repo, i)
		_ = rc.Flush()
	}
}

// repack queues a repack and answers 202 at once; it runs when the
// scheduler admits it, alone on its repository. A full queue or a closing
// scheduler is answered as the middleware answers a rejected request.
func (g *gitCache) repack(w http.ResponseWriter, r *http.Request) {
	repo := r.PathValue("repo")
	err := g.sched.Submit(gitcache.Repack, repo, func(ctx context.Context) error {
		return g.work(ctx, "repack", repo)
	})
	if err != nil {
		httpmw.WriteRejection(w, r, httpmw.RejectionFor(err))
		return
	}
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "repack of %s queued\n", repo)
}

// workFailed answers a request whose work failed; if the client went away
// there is no one to answer.
func workFailed(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	http.Error(w, err.Error(), http.StatusInternalServerError)
}
