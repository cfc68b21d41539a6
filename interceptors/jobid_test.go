package interceptors_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/sourcecontextpb"
	"google.golang.org/protobuf/types/known/typepb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/interceptors"
)

func TestField(t *testing.T) {
	typ := &typepb.Type{
		Name:          "git.v1.CloneRequest",
		SourceContext: &sourcecontextpb.SourceContext{FileName: "git/v1/git.proto"},
		Syntax:        typepb.Syntax_SYNTAX_EDITIONS,
		Fields:        []*typepb.Field{{Name: "repository"}},
	}
	fd := &descriptorpb.FieldDescriptorProto{Name: proto.String(""), Number: proto.Int32(-7)}
	for _, tc := range []struct {
		path string
		req  any
		want string
		code codes.Code
		msg  string
	}{
		{path: "value", req: wrapperspb.String("github.com/golang/go"), want: "github.com/golang/go"},
		{path: "value", req: wrapperspb.Bytes([]byte("\xff\x00raw")), want: "\xff\x00raw"},
		{path: "value", req: wrapperspb.Int64(-42), want: "-42"},
		{path: "value", req: wrapperspb.UInt64(1 << 63), want: "9223372036854775808"},
		{path: "name", req: typ, want: "git.v1.CloneRequest"},
		{path: "source_context.file_name", req: typ, want: "git/v1/git.proto"},
		{path: "sourceContext.fileName", req: typ, want: "git/v1/git.proto"}, // JSON names
		{path: "syntax", req: typ, want: "SYNTAX_EDITIONS"},
		{path: "number", req: fd, want: "-7"},

		{path: "value", req: wrapperspb.String(""), code: codes.InvalidArgument, msg: "not set"},
		{path: "value", req: (*wrapperspb.StringValue)(nil), code: codes.InvalidArgument, msg: "not set"},
		{path: "source_context.file_name", req: &typepb.Type{}, code: codes.InvalidArgument, msg: "not set"},
		{path: "name", req: fd, code: codes.InvalidArgument, msg: "empty"}, // proto2, set to ""

		{path: "repo", req: wrapperspb.String("x"), code: codes.Internal, msg: `has no field "repo"`},
		{path: "fields", req: typ, code: codes.Internal, msg: "repeated"},
		{path: "name.x", req: typ, code: codes.Internal, msg: "not a message"},
		{path: "source_context", req: typ, code: codes.Internal, msg: "not a string"},
		{path: "value", req: wrapperspb.Bool(true), code: codes.Internal, msg: "not a string"},
		{path: "value", req: nil, code: codes.Internal, msg: "FirstMessage"},
		{path: "value", req: "a string", code: codes.Internal, msg: "not a proto message"},
	} {
		got, err := interceptors.Field(tc.path)(t.Context(), tc.req)
		if tc.code == codes.OK {
			if err != nil || got != tc.want {
				t.Errorf("Field(%q) of %v = %q, %v; want %q", tc.path, tc.req, got, err, tc.want)
			}
			continue
		}
		if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Field(%q) of %v: error %v, want %v mentioning %q", tc.path, tc.req, err, tc.code, tc.msg)
		}
	}
}

func TestFieldPanicsOnBadPath(t *testing.T) {
	for _, p := range []string{"", "a..b", "a.", "1a", "a-b"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Field(%q) did not panic", p)
				}
			}()
			interceptors.Field(p)
		}()
	}
}

func TestMetadataValue(t *testing.T) {
	f := interceptors.MetadataValue("X-Repo")
	for _, tc := range []struct {
		md   metadata.MD
		want string
		code codes.Code
	}{
		{metadata.Pairs("x-repo", "linux"), "linux", codes.OK},
		{metadata.Pairs("x-repo", ""), "", codes.InvalidArgument},
		{metadata.Pairs("x-repo", "a", "x-repo", "b"), "", codes.InvalidArgument},
		{metadata.Pairs("other", "a"), "", codes.InvalidArgument},
		{nil, "", codes.InvalidArgument},
	} {
		ctx := t.Context()
		if tc.md != nil {
			ctx = metadata.NewIncomingContext(ctx, tc.md)
		}
		got, err := f(ctx, nil)
		if got != tc.want || status.Code(err) != tc.code {
			t.Errorf("MetadataValue with %v = %q, %v; want %q, %v", tc.md, got, err, tc.want, tc.code)
		}
	}
}
