package main

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/examples/internal/gitcache"
	"github.com/fairseat/fairseat/interceptors"
)

// The service, git.v1.Git, is written by hand in the shape protoc-gen-go-grpc
// generates, so that the example needs no proto compiler. Every method takes
// a google.protobuf.StringValue whose field "value" names the repository:
//
//	service Git {
//	  rpc Clone(google.protobuf.StringValue) returns (google.protobuf.StringValue);
//	  rpc Fetch(google.protobuf.StringValue) returns (stream google.protobuf.StringValue);
//	  rpc Repack(google.protobuf.StringValue) returns (google.protobuf.Empty);
//	}
const (
	cloneMethod  = "/git.v1.Git/Clone"
	fetchMethod  = "/git.v1.Git/Fetch"
	repackMethod = "/git.v1.Git/Repack"
	protoFile    = "git/v1/git.proto"
)

var gitServiceDesc = grpc.ServiceDesc{
	ServiceName: "git.v1.Git",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Clone", Handler: unaryHandler(cloneMethod, (*gitCache).clone)},
		{MethodName: "Repack", Handler: unaryHandler(repackMethod, (*gitCache).repack)},
	},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Fetch",
		ServerStreams: true,
		Handler: func(srv any, stream grpc.ServerStream) error {
			req := new(wrapperspb.StringValue)
			if err := stream.RecvMsg(req); err != nil { // waits for the seat (FirstMessage)
				return err
			}
			return srv.(*gitCache).fetch(req.GetValue(), stream)
		},
	}},
	Metadata: protoFile,
}

// unaryHandler adapts a method of gitCache to a grpc.MethodDesc handler:
// decode the request, then run the interceptor chain around the method.
func unaryHandler(fullMethod string, method func(*gitCache, context.Context, string) (proto.Message, error)) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		req := new(wrapperspb.StringValue)
		if err := dec(req); err != nil {
			return nil, err
		}
		call := func(ctx context.Context, req any) (any, error) {
			return method(srv.(*gitCache), ctx, req.(*wrapperspb.StringValue).GetValue())
		}
		if interceptor == nil {
			return call(ctx, req)
		}
		return interceptor(ctx, req, &grpc.UnaryServerInfo{Server: srv, FullMethod: fullMethod}, call)
	}
}

// Registering the service's file descriptor lets the reflection service
// describe git.v1.Git, so that grpcurl works without a .proto file.
func init() {
	str, empty := ".google.protobuf.StringValue", ".google.protobuf.Empty"
	method := func(name, out string, stream bool) *descriptorpb.MethodDescriptorProto {
		return &descriptorpb.MethodDescriptorProto{Name: &name, InputType: &str, OutputType: &out, ServerStreaming: &stream}
	}
	fdp := &descriptorpb.FileDescriptorProto{
		Name:       proto.String(protoFile),
		Package:    proto.String("git.v1"),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"google/protobuf/wrappers.proto", "google/protobuf/empty.proto"},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("Git"),
			Method: []*descriptorpb.MethodDescriptorProto{
				method("Clone", str, false), method("Fetch", str, true), method("Repack", empty, false),
			},
		}},
	}
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err == nil {
		err = protoregistry.GlobalFiles.RegisterFile(fd)
	}
	if err != nil {
		panic(err)
	}
}

// gitCache simulates a git cache. Clone and Fetch are foreground requests,
// admitted by the interceptors before these methods run. Repack is
// background maintenance: the method only queues it with the scheduler.
type gitCache struct {
	sched *admission.Scheduler
	work  gitcache.WorkFunc
}

func (g *gitCache) clone(ctx context.Context, repo string) (proto.Message, error) {
	if err := g.work(ctx, "clone", repo); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	return wrapperspb.String("cloned " + repo), nil
}

// fetch streams three progress messages, holding its seat throughout.
func (g *gitCache) fetch(repo string, stream grpc.ServerStream) error {
	for i := 1; i <= 3; i++ {
		if err := g.work(stream.Context(), "fetch", repo); err != nil {
			return status.FromContextError(err).Err()
		}
		if err := stream.SendMsg(wrapperspb.String(fmt.Sprintf("fetched %s: part %d/3", repo, i))); err != nil {
			return err
		}
	}
	return nil
}

// repack queues a repack and returns at once; it runs when the scheduler
// admits it, alone on its repository. A full queue or a closing scheduler
// is answered as the interceptors answer a rejected call.
func (g *gitCache) repack(ctx context.Context, repo string) (proto.Message, error) {
	err := g.sched.Submit(gitcache.Repack, repo, func(ctx context.Context) error {
		return g.work(ctx, "repack", repo)
	})
	if err != nil {
		return nil, interceptors.DefaultStatus(ctx, err).Err()
	}
	return &emptypb.Empty{}, nil
}
