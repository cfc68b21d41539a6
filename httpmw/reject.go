package httpmw

import (
	"encoding/json"
	"errors"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fairseat/fairseat/admission"
)

// A Rejection is a request the middleware answers itself instead of running
// its handler.
type Rejection struct {
	Status     int           // 400, 429, 500 or 503
	RetryAfter time.Duration // 0 when a retry cannot help (400, 500)
	Err        error         // why; wraps the admission sentinel errors
}

// A RejectHandler writes the response to a rejected request.
type RejectHandler func(http.ResponseWriter, *http.Request, Rejection)

// RejectionFor is the response the middleware gives for an admission error,
// for handlers that call the scheduler themselves (a Submit that failed):
// pass it to WriteRejection or a RejectHandler. A nil err is the caller's
// bug, answered 500.
func RejectionFor(err error) Rejection {
	if err == nil {
		return Rejection{Status: http.StatusInternalServerError, Err: errNilRejection}
	}
	return rejection(err)
}

var errNilRejection = errors.New("httpmw: RejectionFor(nil): there is no error to answer")

// rejection maps an admission error to its response: the caller's own share
// (RejectedError.PerKey) is 429, the server's overload, wait timeout and
// shutdown are 503, an unregistered job type is the server's bug (500).
func rejection(err error) Rejection {
	var rej *admission.RejectedError
	switch {
	case errors.As(err, &rej) && rej.PerKey:
		return Rejection{Status: http.StatusTooManyRequests, RetryAfter: rej.RetryAfter, Err: err}
	case errors.As(err, &rej):
		return Rejection{Status: http.StatusServiceUnavailable, RetryAfter: rej.RetryAfter, Err: err}
	case errors.Is(err, admission.ErrUnknownJobType):
		return Rejection{Status: http.StatusInternalServerError, Err: err}
	default:
		return Rejection{Status: http.StatusServiceUnavailable, RetryAfter: time.Second, Err: err}
	}
}

// WriteRejection is the default RejectHandler: Retry-After in whole seconds
// (rounded up) for 429 and 503, and a short body — JSON
// {"error": ..., "retry_after_seconds": ...} when the client accepts
// application/json, plain text otherwise. Server errors (500) say only that,
// not why: the reason is the operator's, not the client's. A Status that
// is no HTTP status code (outside 100-999, which net/http would panic on)
// is written as 500, and a nil Err as the status text.
func WriteRejection(w http.ResponseWriter, r *http.Request, rej Rejection) {
	if rej.Status < 100 || rej.Status > 999 {
		rej.Status = http.StatusInternalServerError
	}
	msg := http.StatusText(rej.Status)
	if rej.Err != nil {
		msg = rej.Err.Error()
	}
	if rej.Status >= 500 && rej.Status != http.StatusServiceUnavailable {
		msg = http.StatusText(rej.Status)
	}
	secs := 0
	if rej.Status == http.StatusTooManyRequests || rej.Status == http.StatusServiceUnavailable {
		secs = max(1, int(math.Ceil(rej.RetryAfter.Seconds())))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if r != nil && acceptsJSON(r) {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(rej.Status)
		body := struct {
			Error      string `json:"error"`
			RetryAfter int    `json:"retry_after_seconds,omitempty"`
		}{msg, secs}
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(rej.Status)
	_, _ = w.Write([]byte(msg + "\n"))
}

// acceptsJSON reports whether the Accept header lists application/json with
// a non-zero quality.
func acceptsJSON(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != "application/json" {
				continue
			}
			if q, err := strconv.ParseFloat(params["q"], 64); err == nil && q == 0 {
				continue
			}
			return true
		}
	}
	return false
}
