package interceptors_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/interceptors"
)

// streamTypes adds "fetch", in the same conflict group as "clone".
var streamTypes = map[admission.JobType]admission.JobTypeConfig{
	"clone": cloneTypes["clone"],
	"fetch": {DefaultCost: 10 * time.Second, ConflictGroup: "git", Priority: 8},
}

// fetch calls the server-streaming Fetch for repo and reads the stream to
// its end. The trailer it returns is the stream's.
func fetch(ctx context.Context, cc *grpc.ClientConn, repo string) (metadata.MD, error) {
	st, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, fetchMethod)
	if err != nil {
		return nil, err
	}
	if err := st.SendMsg(wrapperspb.String(repo)); err != nil && !errors.Is(err, io.EOF) {
		return st.Trailer(), err // io.EOF: the server has ended the stream; RecvMsg says how
	}
	if err := st.CloseSend(); err != nil {
		return nil, err
	}
	for {
		err := st.RecvMsg(new(wrapperspb.StringValue))
		if errors.Is(err, io.EOF) {
			return st.Trailer(), nil
		}
		if err != nil {
			return st.Trailer(), err
		}
	}
}

// gatedFetch makes Fetch handlers wait at g under "fetch " and the
// repository's name.
func gatedFetch(g *gate) func(*wrapperspb.StringValue, grpc.ServerStream) error {
	return func(req *wrapperspb.StringValue, ss grpc.ServerStream) error {
		if err := g.enter(ss.Context(), "fetch "+req.GetValue()); err != nil {
			return err
		}
		return ss.SendMsg(wrapperspb.String("fetched"))
	}
}

func TestStreamModes(t *testing.T) {
	t.Run("HoldStream holds the seat until the handler returns", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, envConfig{types: streamTypes, opts: []interceptors.Option{cloneRoutes,
				interceptors.WithRoutes(interceptors.Routes{fetchMethod: {Type: "fetch", JobID: interceptors.MetadataValue("x-repo")}})}})
			g := newGate()
			e.git.fetch = gatedFetch(g)
			cc := e.client("203.0.113.7:5000", nil)
			done := make(chan error, 1)
			go func() {
				_, err := fetch(metadata.AppendToOutgoingContext(t.Context(), "x-repo", "linux"), cc, "linux")
				done <- err
			}()
			synctest.Wait()
			wantEntered(t, e, g, "fetch linux")
			wantSeats(t, e, 1, 0)
			g.open("fetch linux")
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			wantSeats(t, e, 0, 0)
		})
	})

	t.Run("GateStream waits for a seat and runs without it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, envConfig{types: streamTypes, opts: []interceptors.Option{cloneRoutes,
				interceptors.WithRoutes(interceptors.Routes{fetchMethod: {Type: "fetch", Stream: interceptors.GateStream}})}})
			g := newGate()
			e.git.clone, e.git.fetch = gatedClone(g), gatedFetch(g)
			cc := e.client("203.0.113.7:5000", nil)
			go clone(t.Context(), cc, "busy")
			synctest.Wait()
			wantEntered(t, e, g, "busy")
			done := make(chan error, 1)
			go func() { _, err := fetch(t.Context(), cc, "linux"); done <- err }()
			synctest.Wait()
			wantEntered(t, e, g) // the stream waits for the seat
			wantSeats(t, e, 1, 1)
			g.open("busy")
			synctest.Wait()
			wantEntered(t, e, g, "fetch linux")
			wantSeats(t, e, 0, 0) // its handler runs, but the seat is free
			g.open("fetch linux")
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	})

	t.Run("FirstMessage takes the job ID from the request", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, envConfig{sched: admission.Config{Capacity: 4}, types: streamTypes, opts: []interceptors.Option{cloneRoutes,
				interceptors.WithRoutes(interceptors.Routes{fetchMethod: {Type: "fetch", JobID: interceptors.Field("value"), Stream: interceptors.FirstMessage}})}})
			g := newGate()
			e.git.clone, e.git.fetch = gatedClone(g), gatedFetch(g)
			cc := e.client("203.0.113.7:5000", nil)
			go clone(t.Context(), cc, "linux")
			synctest.Wait()
			wantEntered(t, e, g, "linux")
			done := make(chan error, 2)
			for _, repo := range []string{"linux", "go"} {
				go func() { _, err := fetch(t.Context(), cc, repo); done <- err }()
			}
			synctest.Wait()
			wantEntered(t, e, g, "fetch go") // the linux fetch conflicts with the clone
			if q := e.sched.Snapshot().Queue; len(q) != 1 || q[0].Type != "fetch" || q[0].JobID != "linux" || q[0].BlockedBy != "conflict" {
				t.Fatalf("want the linux fetch queued behind the clone\n%s", describe(e.sched))
			}
			g.open("fetch go")
			g.open("linux")
			synctest.Wait()
			wantEntered(t, e, g, "fetch linux")
			wantSeats(t, e, 1, 0) // held until the handler returns
			g.open("fetch linux")
			for range 2 {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			synctest.Wait()
			wantSeats(t, e, 0, 0)
		})
	})

	t.Run("FirstMessage holds the seat across a bidirectional stream", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, envConfig{types: streamTypes, opts: []interceptors.Option{
				interceptors.WithRoutes(interceptors.Routes{pushMethod: {Type: "fetch", JobID: interceptors.Field("value"), Stream: interceptors.FirstMessage}})}})
			received := make(chan string)
			e.git.push = func(ss grpc.ServerStream) error {
				for {
					m := new(wrapperspb.StringValue)
					if err := ss.RecvMsg(m); errors.Is(err, io.EOF) {
						return ss.SendMsg(wrapperspb.String("done"))
					} else if err != nil {
						return err
					}
					received <- m.GetValue()
				}
			}
			cc := e.client("203.0.113.7:5000", nil)
			st, err := cc.NewStream(t.Context(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, pushMethod)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range []string{"linux", "more", "data"} {
				if err := st.SendMsg(wrapperspb.String(v)); err != nil {
					t.Fatal(err)
				}
				if got := <-received; got != v {
					t.Fatalf("server received %q, want %q", got, v)
				}
				synctest.Wait()
				wantSeats(t, e, 1, 0)
				if q := e.sched.Snapshot(); q.Types[1].Running != 1 {
					t.Fatalf("want the push running as fetch\n%s", describe(e.sched))
				}
			}
			if err := st.CloseSend(); err != nil {
				t.Fatal(err)
			}
			if err := st.RecvMsg(new(wrapperspb.StringValue)); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			wantSeats(t, e, 0, 0)
		})
	})
}

// A FirstMessage handler whose route needs no message (its job ID comes
// from metadata) and that sends its header before it receives is
// admitted at that send: the header reaches the client after admission,
// and the seat is held until the handler returns.
func TestStreamFirstMessageAdmittedAtSendHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, envConfig{types: streamTypes, opts: []interceptors.Option{
			interceptors.WithRoutes(interceptors.Routes{pushMethod: {Type: "fetch", JobID: interceptors.MetadataValue("x-repo"), Stream: interceptors.FirstMessage}})}})
		sent, finish := make(chan error, 1), make(chan struct{})
		release := sync.OnceFunc(func() { close(finish) })
		defer release() // a failed check must not leave the handler blocked
		e.git.push = func(ss grpc.ServerStream) error {
			err := ss.SendHeader(metadata.Pairs("x-early", "1"))
			sent <- err
			<-finish
			return err
		}
		cc := e.client("203.0.113.7:5000", nil)
		ctx := metadata.AppendToOutgoingContext(t.Context(), "x-repo", "linux")
		st, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, pushMethod)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-sent; err != nil {
			t.Fatalf("SendHeader: %v", err)
		}
		synctest.Wait()
		wantSeats(t, e, 1, 0)
		md, err := st.Header()
		if v := md.Get("x-early"); err != nil || len(v) != 1 || v[0] != "1" {
			t.Fatalf("header %v, %v; want x-early: 1", md, err)
		}
		release()
		if err := st.RecvMsg(new(wrapperspb.StringValue)); !errors.Is(err, io.EOF) {
			t.Fatalf("RecvMsg: %v, want io.EOF", err)
		}
		synctest.Wait()
		wantSeats(t, e, 0, 0)
	})
}

// A FirstMessage stream refused at its first message gets the rejection,
// with its retry hint in the stream's trailer.
func TestStreamFirstMessageRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, envConfig{sched: admission.Config{DefaultKey: admission.KeyPolicy{MaxQueued: 1}}, types: streamTypes, opts: []interceptors.Option{cloneRoutes,
			interceptors.WithRoutes(interceptors.Routes{fetchMethod: {Type: "fetch", JobID: interceptors.Field("value"), Stream: interceptors.FirstMessage}})}})
		g := newGate()
		e.git.clone, e.git.fetch = gatedClone(g), gatedFetch(g)
		cc := e.client("203.0.113.7:5000", nil)
		go clone(t.Context(), cc, "busy")
		synctest.Wait()
		queued := make(chan error, 1)
		go func() { _, err := fetch(t.Context(), cc, "a"); queued <- err }()
		synctest.Wait()
		wantSeats(t, e, 1, 1)

		trailer, err := fetch(t.Context(), cc, "b")
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("second queued fetch of the same caller: %v, want ResourceExhausted", err)
		}
		// 10 s for the running clone, 10 s for the caller's queued fetch.
		if got := trailer.Get(interceptors.PushbackTrailer); len(got) != 1 || got[0] != "20000" {
			t.Errorf("pushback trailer %q, want [20000]", got)
		}
		g.open("busy")
		g.open("fetch a")
		if err := <-queued; err != nil {
			t.Fatal(err)
		}
	})
}

// Stream routes whose job ID cannot be found are refused: a Field on a
// stream admitted before any message is a configuration error, and so is a
// FirstMessage handler that sends (a message, or its header) before it
// receives: it is admitted at that send, with no request to read a field
// from.
func TestStreamJobIDErrors(t *testing.T) {
	sendMsg := func(ss grpc.ServerStream) error { return ss.SendMsg(wrapperspb.String("hello")) }
	sendHeader := func(ss grpc.ServerStream) error { return ss.SendHeader(metadata.Pairs("x-early", "1")) }
	for _, tc := range []struct {
		name   string
		route  interceptors.Route
		method string
		send   func(grpc.ServerStream) error // what the push handler does first
		want   string
	}{
		{"HoldStream with Field", interceptors.Route{Type: "fetch", JobID: interceptors.Field("value")}, fetchMethod, nil, "FirstMessage"},
		{"FirstMessage sending first", interceptors.Route{Type: "fetch", JobID: interceptors.Field("value"), Stream: interceptors.FirstMessage}, pushMethod, sendMsg, "not a proto message"},
		{"FirstMessage sending its header first", interceptors.Route{Type: "fetch", JobID: interceptors.Field("value"), Stream: interceptors.FirstMessage}, pushMethod, sendHeader, "not a proto message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, envConfig{types: streamTypes, opts: []interceptors.Option{
					interceptors.WithRoutes(interceptors.Routes{tc.method: tc.route})}})
				handlerErr, recvErr := make(chan error, 1), make(chan error, 1)
				e.git.push = func(ss grpc.ServerStream) error {
					err := tc.send(ss)
					handlerErr <- err
					// A handler that reads on after its admission failed
					// gets the same refusal, not the client's message.
					recvErr <- ss.RecvMsg(new(wrapperspb.StringValue))
					return err
				}
				cc := e.client("203.0.113.7:5000", nil)
				st, err := cc.NewStream(t.Context(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, tc.method)
				if err != nil {
					t.Fatal(err)
				}
				err = st.RecvMsg(new(wrapperspb.StringValue))
				if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want Internal mentioning %q", err, tc.want)
				}
				if tc.method == pushMethod {
					if status.Code(<-handlerErr) != codes.Internal {
						t.Error("the handler's first send did not fail")
					}
					if err := <-recvErr; status.Code(err) != codes.Internal {
						t.Errorf("RecvMsg after the failed admission: %v, want the same Internal", err)
					}
				}
				wantSeats(t, e, 0, 0)
			})
		})
	}
}
