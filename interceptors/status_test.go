package interceptors_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/interceptors"
)

// recorder is a StatusFunc that remembers what it mapped.
type recorder struct {
	errs chan error
}

func newRecorder() *recorder { return &recorder{errs: make(chan error, 10)} }

func (r *recorder) option() interceptors.Option {
	return interceptors.WithStatusFunc(func(ctx context.Context, err error) *status.Status {
		r.errs <- err
		return interceptors.DefaultStatus(ctx, err)
	})
}

// last returns the one error mapped since the last call.
func (r *recorder) last(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.errs:
		return err
	default:
		t.Fatal("no error was mapped")
		return nil
	}
}

// retryInfo is st's RetryInfo detail, or nil.
func retryInfo(st *status.Status) *errdetails.RetryInfo {
	var info *errdetails.RetryInfo
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			info = ri
		}
	}
	return info
}

// retryHint returns the RetryInfo delay of err's status and the pushback
// trailer, checking that they agree.
func retryHint(t *testing.T, err error, trailer metadata.MD) (time.Duration, bool) {
	t.Helper()
	info := retryInfo(status.Convert(err))
	push := trailer.Get(interceptors.PushbackTrailer)
	switch {
	case info == nil && len(push) == 0:
		return 0, false
	case info == nil || len(push) != 1:
		t.Fatalf("RetryInfo %v and pushback trailer %q: want both or neither", info, push)
	}
	d := info.GetRetryDelay().AsDuration()
	if want := fmt.Sprint(d.Milliseconds()); push[0] != want || d%time.Millisecond != 0 {
		t.Fatalf("pushback trailer %q, RetryInfo %v: want the same whole milliseconds", push, d)
	}
	return d, true
}

// wantRejection checks a call's status and retry hint against the error the
// scheduler gave: the hint is its RetryAfter rounded up to the millisecond.
func wantRejection(t *testing.T, err error, trailer metadata.MD, schedErr error, code codes.Code, perKey bool) time.Duration {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("status %v, want %v", err, code)
	}
	var rej *admission.RejectedError
	if !errors.As(schedErr, &rej) || rej.PerKey != perKey {
		t.Fatalf("scheduler error %v, want a RejectedError with PerKey %v", schedErr, perKey)
	}
	hint, ok := retryHint(t, err, trailer)
	want := max(time.Millisecond, (rej.RetryAfter + time.Millisecond - 1).Truncate(time.Millisecond))
	if !ok || hint != want {
		t.Fatalf("retry hint %v (present %v), want %v from RetryAfter %v", hint, ok, want, rej.RetryAfter)
	}
	return hint
}

// Every rejection path, end to end: its status code, and a retry hint that
// is the scheduler's estimate.
func TestRejections(t *testing.T) {
	t.Run("caller's queue full: ResourceExhausted, hint follows the estimate", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e := newEnv(t, envConfig{sched: admission.Config{DefaultKey: admission.KeyPolicy{MaxQueued: 1}}, types: cloneTypes,
				opts: []interceptors.Option{cloneRoutes, rec.option()}})
			g := newGate()
			e.git.clone = gatedClone(g)
			cc := e.client("203.0.113.7:5000", nil)
			go clone(t.Context(), cc, "busy")
			synctest.Wait()
			go clone(t.Context(), cc, "queued")
			synctest.Wait()

			var trailer metadata.MD
			err := clone(t.Context(), cc, "refused", grpc.Trailer(&trailer))
			if hint := wantRejection(t, err, trailer, rec.last(t), codes.ResourceExhausted, true); hint != 20*time.Second {
				t.Errorf("hint %v, want 20s: 10 s left of the running clone, 10 s for the queued one", hint)
			}
			time.Sleep(4 * time.Second)
			err = clone(t.Context(), cc, "refused", grpc.Trailer(&trailer))
			if hint := wantRejection(t, err, trailer, rec.last(t), codes.ResourceExhausted, true); hint != 16*time.Second {
				t.Errorf("hint %v 4 s later, want 16s", hint)
			}
			g.open("busy")
			g.open("queued")
		})
	})

	t.Run("pushed out by a lighter caller: ResourceExhausted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e := newEnv(t, envConfig{sched: admission.Config{MaxQueue: 1}, types: cloneTypes,
				opts: []interceptors.Option{cloneRoutes, rec.option()}})
			g := newGate()
			e.git.clone = gatedClone(g)
			heavy := e.client("203.0.113.7:5000", nil)
			light := e.client("198.51.100.1:5000", nil)
			go clone(t.Context(), heavy, "busy")
			synctest.Wait()
			pushed := make(chan error, 1)
			var trailer metadata.MD
			go func() { pushed <- clone(t.Context(), heavy, "queued", grpc.Trailer(&trailer)) }()
			synctest.Wait()
			go clone(t.Context(), light, "light") // pushes heavy's queued clone out
			err := <-pushed
			wantRejection(t, err, trailer, rec.last(t), codes.ResourceExhausted, true)
			g.open("busy")
			g.open("light")
		})
	})

	t.Run("waited MaxWait: Unavailable", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			types := map[admission.JobType]admission.JobTypeConfig{"clone": {DefaultCost: 10 * time.Second, Priority: 8, MaxWait: 3 * time.Second}}
			e := newEnv(t, envConfig{types: types, opts: []interceptors.Option{cloneRoutes, rec.option()}})
			g := newGate()
			e.git.clone = gatedClone(g)
			cc := e.client("203.0.113.7:5000", nil)
			go clone(t.Context(), cc, "busy")
			synctest.Wait()
			start := time.Now()
			var trailer metadata.MD
			err := clone(t.Context(), cc, "late", grpc.Trailer(&trailer))
			if waited := time.Since(start); waited != 3*time.Second {
				t.Errorf("rejected after %v, want MaxWait 3s", waited)
			}
			if hint := wantRejection(t, err, trailer, rec.last(t), codes.Unavailable, false); hint != 7*time.Second {
				t.Errorf("hint %v, want the 7 s left of the running clone", hint)
			}
			g.open("busy")
		})
	})

	t.Run("scheduler closing: Unavailable", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e := newEnv(t, envConfig{types: cloneTypes, noClose: true, opts: []interceptors.Option{cloneRoutes, rec.option()}})
			g := newGate()
			e.git.clone = gatedClone(g)
			cc := e.client("203.0.113.7:5000", nil)
			go clone(t.Context(), cc, "busy")
			synctest.Wait()
			queued := make(chan error, 1)
			var trailer metadata.MD
			go func() { queued <- clone(t.Context(), cc, "queued", grpc.Trailer(&trailer)) }()
			synctest.Wait()
			if err := e.sched.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			wantRejection(t, <-queued, trailer, rec.last(t), codes.Unavailable, false)
			err := clone(t.Context(), cc, "after", grpc.Trailer(&trailer))
			if hint := wantRejection(t, err, trailer, rec.last(t), codes.Unavailable, false); hint != time.Millisecond {
				t.Errorf("hint %v, want the 1 ms minimum (the scheduler has no estimate when closed)", hint)
			}
			g.open("busy")
		})
	})

	t.Run("server's deadline while queued: DeadlineExceeded, no hint", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// The server's own deadline (a timeout interceptor), so that it
			// expires on the server rather than by the client's cancellation.
			timeout := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if req.(*wrapperspb.StringValue).GetValue() != "x" {
					return h(ctx, req)
				}
				ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				return h(ctx, req)
			}
			rec := newRecorder()
			e := newEnv(t, envConfig{types: cloneTypes, outer: []grpc.UnaryServerInterceptor{timeout},
				opts: []interceptors.Option{cloneRoutes, rec.option()}})
			g := newGate()
			e.git.clone = gatedClone(g)
			cc := e.client("203.0.113.7:5000", nil)
			go clone(t.Context(), cc, "busy")
			synctest.Wait()
			var trailer metadata.MD
			if err := clone(t.Context(), cc, "x", grpc.Trailer(&trailer)); status.Code(err) != codes.DeadlineExceeded {
				t.Fatalf("got %v, want DeadlineExceeded", err)
			} else if _, ok := retryHint(t, err, trailer); ok {
				t.Error("a deadline has a retry hint")
			}
			synctest.Wait()
			if err := rec.last(t); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("scheduler returned %v, want context.DeadlineExceeded", err)
			}
			wantSeats(t, e, 1, 0)
			g.open("busy")
		})
	})

	t.Run("caller cancels while queued: Canceled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e := newEnv(t, envConfig{types: cloneTypes, opts: []interceptors.Option{cloneRoutes, rec.option()}})
			g := newGate()
			e.git.clone = gatedClone(g)
			cc := e.client("203.0.113.7:5000", nil)
			go clone(t.Context(), cc, "busy")
			synctest.Wait()
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- clone(ctx, cc, "x") }()
			synctest.Wait()
			cancel()
			if err := <-done; status.Code(err) != codes.Canceled {
				t.Fatalf("got %v, want Canceled", err)
			}
			synctest.Wait()
			if st := interceptors.DefaultStatus(t.Context(), rec.last(t)); st.Code() != codes.Canceled || len(st.Details()) != 0 {
				t.Fatalf("server mapped the cancellation to %v %v, want Canceled without details", st.Code(), st.Details())
			}
			wantSeats(t, e, 1, 0)
			g.open("busy")
		})
	})

	for _, tc := range []struct {
		name   string
		opts   []interceptors.Option
		remote string
		repo   string
		code   codes.Code
		want   string
	}{
		{"unregistered job type: Internal naming it",
			[]interceptors.Option{interceptors.WithRoutes(interceptors.Routes{cloneMethod: {Type: "typo"}})},
			"203.0.113.7:5000", "x", codes.Internal, `"typo"`},
		{"no job ID: InvalidArgument", []interceptors.Option{cloneRoutes}, "203.0.113.7:5000", "", codes.InvalidArgument, `job ID field "value" is not set`},
		{"no fairness key: InvalidArgument", []interceptors.Option{cloneRoutes}, "", "x", codes.InvalidArgument, "the peer has no IP address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, envConfig{types: cloneTypes, opts: tc.opts})
				var trailer metadata.MD
				err := clone(t.Context(), e.client(tc.remote, nil), tc.repo, grpc.Trailer(&trailer))
				if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want %v mentioning %s", err, tc.code, tc.want)
				}
				if _, ok := retryHint(t, err, trailer); ok {
					t.Error("a configuration or request error has a retry hint")
				}
			})
		})
	}
}

// DefaultStatus maps every kind of error its doc lists, with a retry hint
// only on rejections.
func TestDefaultStatusMapping(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		code  codes.Code
		retry time.Duration // 0: no RetryInfo
		text  string        // in the status message
	}{
		{"the caller's share", &admission.RejectedError{Reason: admission.ErrQueueFull, PerKey: true, RetryAfter: 1500 * time.Microsecond, Type: "clone"},
			codes.ResourceExhausted, 2 * time.Millisecond, "clone"},
		{"the whole server", &admission.RejectedError{Reason: admission.ErrOverloaded, RetryAfter: 3 * time.Second, Type: "clone"},
			codes.Unavailable, 3 * time.Second, "clone"},
		{"a rejection without an estimate", &admission.RejectedError{Reason: admission.ErrClosed, Type: "clone"},
			codes.Unavailable, time.Millisecond, "closed"},
		{"cancelled", fmt.Errorf("waiting: %w", context.Canceled), codes.Canceled, 0, ""},
		{"deadline", context.DeadlineExceeded, codes.DeadlineExceeded, 0, ""},
		{"an unregistered type", fmt.Errorf("%w: %q", admission.ErrUnknownJobType, "fetch"), codes.Internal, 0, `"fetch"`},
		{"a bare sentinel", fmt.Errorf("wrapped: %w", admission.ErrWaitTimeout), codes.Unavailable, time.Millisecond, "wrapped"},
		{"a status error", status.Error(codes.NotFound, "no such repository"), codes.NotFound, 0, "no such repository"},
		{"any other error", errors.New("boom"), codes.Internal, 0, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := interceptors.DefaultStatus(t.Context(), tc.err)
			if st.Code() != tc.code || !strings.Contains(st.Message(), tc.text) {
				t.Errorf("DefaultStatus(%v) = %v, want %v with %q", tc.err, st, tc.code, tc.text)
			}
			if retry := retryInfo(st).GetRetryDelay().AsDuration(); retry != tc.retry {
				t.Errorf("RetryInfo %v, want %v", retry, tc.retry)
			}
		})
	}
}

// A custom StatusFunc decides the code, and the trailer follows its
// RetryInfo.
func TestStatusFuncOverride(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		custom := interceptors.WithStatusFunc(func(ctx context.Context, err error) *status.Status {
			switch {
			case errors.Is(err, admission.ErrClosed):
				return interceptors.AddRetryInfo(status.New(codes.Aborted, "draining"), 1500*time.Microsecond)
			case status.Code(err) == codes.InvalidArgument:
				return nil // means DefaultStatus: a refusal cannot become OK
			}
			return interceptors.DefaultStatus(ctx, err)
		})
		e := newEnv(t, envConfig{types: cloneTypes, noClose: true, opts: []interceptors.Option{cloneRoutes, custom}})
		cc := e.client("203.0.113.7:5000", nil)
		if err := e.sched.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		var trailer metadata.MD
		err := clone(t.Context(), cc, "x", grpc.Trailer(&trailer))
		if status.Code(err) != codes.Aborted {
			t.Fatalf("got %v, want Aborted", err)
		}
		if hint, _ := retryHint(t, err, trailer); hint != 2*time.Millisecond {
			t.Errorf("hint %v, want 1.5 ms rounded up to 2ms", hint)
		}
		if err := clone(t.Context(), cc, ""); status.Code(err) != codes.InvalidArgument {
			t.Errorf("a StatusFunc returning nil: %v, want DefaultStatus's InvalidArgument", err)
		}
	})
}

// A grpc-go client whose retry policy covers the code waits exactly the
// pushback before it retries, and the retry is admitted.
func TestClientRetryHonoursPushback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attempts []time.Duration
		start := time.Now()
		record := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if req.(*wrapperspb.StringValue).GetValue() == "retried" {
				attempts = append(attempts, time.Since(start))
			}
			return h(ctx, req)
		}
		types := map[admission.JobType]admission.JobTypeConfig{"clone": {DefaultCost: 10 * time.Second, Priority: 8, MaxWait: 2 * time.Second}}
		e := newEnv(t, envConfig{types: types, outer: []grpc.UnaryServerInterceptor{record}, opts: []interceptors.Option{cloneRoutes}})
		g := newGate()
		e.git.clone = gatedClone(g)
		busy := e.client("198.51.100.1:5000", nil)
		go clone(t.Context(), busy, "busy")
		synctest.Wait()

		// The backoff alone would retry after 10 ms, and be refused again.
		cc := e.client("203.0.113.7:5000", nil, grpc.WithDefaultServiceConfig(`{"methodConfig": [{
			"name": [{"service": "git.v1.Git"}],
			"retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
				"backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]}}]}`))
		done := make(chan error, 1)
		go func() { done <- clone(t.Context(), cc, "retried") }()
		time.Sleep(9 * time.Second) // the busy clone ends a second before its estimate
		g.open("busy")
		synctest.Wait()
		wantEntered(t, e, g, "busy") // the retry is not due yet
		time.Sleep(time.Second)
		synctest.Wait()
		wantEntered(t, e, g, "retried")
		g.open("retried")
		if err := <-done; err != nil {
			t.Fatalf("retried call: %v", err)
		}
		// Refused at 2 s (MaxWait) with the 8 s left of the busy clone's
		// estimate; retried 8 s later.
		if want := []time.Duration{0, 10 * time.Second}; fmt.Sprint(attempts) != fmt.Sprint(want) {
			t.Errorf("attempts arrived at %v, want %v", attempts, want)
		}
	})
}
