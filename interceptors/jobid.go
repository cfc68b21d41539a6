package interceptors

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// A JobIDFunc returns the job ID of a call: the resource it works on (a
// repository, a bucket). req is the request message of a unary call or the
// first message of a FirstMessage stream, and nil for streams admitted before
// their first message.
//
// An error rejects the call. If it is a gRPC status error (status.Error) the
// client gets that status; any other error becomes codes.InvalidArgument.
// It is called concurrently, from every call's goroutine.
type JobIDFunc func(ctx context.Context, req any) (string, error)

// Field returns a JobIDFunc that reads the job ID from a field of the request
// message through protoreflect, so no generated getter is needed. path names
// the field by its proto name ("repository") or JSON name, and may go
// through singular message fields ("repository.relative_path").
//
// The field may be a string, bytes, integer or enum (the value's name) field,
// not repeated or a map. A field that is not set (or, without explicit
// presence, holds its zero value) or is set to the empty string rejects the
// call with codes.InvalidArgument. Job IDs longer than
// admission.MaxIdentifierLen are hashed by the scheduler.
// A path the message does not have, a field of another kind, or a request
// that is not a proto message is a server configuration error and rejects
// the call with codes.Internal.
//
// Field panics if path is not a dot-separated list of valid proto names.
func Field(path string) JobIDFunc {
	names := strings.Split(path, ".")
	for _, n := range names {
		if !protoreflect.Name(n).IsValid() {
			panic(fmt.Sprintf("interceptors: Field(%q): %q is not a valid proto field name", path, n))
		}
	}
	// A route sees one request type: the fields resolved for the last
	// message descriptor are kept, so a call costs no name lookups.
	var last atomic.Pointer[resolvedPath]
	return func(_ context.Context, req any) (string, error) {
		m, ok := req.(proto.Message)
		if !ok || m == nil {
			return "", status.Errorf(codes.Internal,
				"interceptors: job ID field %q: the request is %T, not a proto message (a stream admitted before its first message needs FirstMessage)", path, req)
		}
		msg := m.ProtoReflect()
		md := msg.Descriptor()
		r := last.Load()
		if r == nil || r.md != md {
			fds, err := resolveFields(md, names, path)
			if err != nil {
				return "", err
			}
			r = &resolvedPath{md, fds}
			last.Store(r)
		}
		return readField(msg, r.fds, path)
	}
}

// resolvedPath is a field path resolved against one message descriptor.
type resolvedPath struct {
	md  protoreflect.MessageDescriptor
	fds []protoreflect.FieldDescriptor
}

// resolveFields resolves names against md. Resolving before reading makes
// a path the message type cannot have an Internal error whatever the
// message holds, so a configuration error never passes for the client's.
func resolveFields(md protoreflect.MessageDescriptor, names []string, path string) ([]protoreflect.FieldDescriptor, error) {
	fds := make([]protoreflect.FieldDescriptor, 0, len(names))
	for i, n := range names {
		fd := lookupField(md, n)
		switch {
		case fd == nil:
			return nil, status.Errorf(codes.Internal, "interceptors: job ID field %q: message %s has no field %q", path, md.FullName(), n)
		case fd.IsList() || fd.IsMap():
			return nil, status.Errorf(codes.Internal, "interceptors: job ID field %q: %s is repeated", path, fd.FullName())
		case i < len(names)-1 && fd.Message() == nil:
			return nil, status.Errorf(codes.Internal, "interceptors: job ID field %q: %s is not a message", path, fd.FullName())
		case i == len(names)-1 && !scalarKind(fd.Kind()):
			return nil, status.Errorf(codes.Internal, "interceptors: job ID field %q: %s is a %v field, not a string, bytes, integer or enum",
				path, fd.FullName(), fd.Kind())
		}
		fds, md = append(fds, fd), fd.Message()
	}
	return fds, nil
}

// readField reads the scalar at the end of a resolved path in msg.
func readField(msg protoreflect.Message, fds []protoreflect.FieldDescriptor, path string) (string, error) {
	leaf := fds[len(fds)-1]
	for _, fd := range fds[:len(fds)-1] {
		if !msg.IsValid() || !msg.Has(fd) {
			return "", status.Errorf(codes.InvalidArgument, "job ID field %q is not set", path)
		}
		msg = msg.Get(fd).Message()
	}
	if !msg.IsValid() {
		return "", status.Errorf(codes.InvalidArgument, "job ID field %q is not set", path)
	}
	// A string or bytes field that holds something is set, with or without
	// explicit presence: only an empty one needs Has, to say which error it
	// is. A zero integer or enum is a job ID when its presence is explicit.
	k := leaf.Kind()
	text := k == protoreflect.StringKind || k == protoreflect.BytesKind
	if !text && !msg.Has(leaf) {
		return "", status.Errorf(codes.InvalidArgument, "job ID field %q is not set", path)
	}
	if s := formatScalar(leaf, k, msg.Get(leaf)); s != "" {
		return s, nil
	}
	if !msg.Has(leaf) {
		return "", status.Errorf(codes.InvalidArgument, "job ID field %q is not set", path)
	}
	return "", status.Errorf(codes.InvalidArgument, "job ID field %q is empty", path) // a proto2 or optional field explicitly set to ""
}

func lookupField(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	fields := md.Fields()
	if fd := fields.ByName(protoreflect.Name(name)); fd != nil {
		return fd
	}
	return fields.ByJSONName(name)
}

func scalarKind(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.MessageKind, protoreflect.GroupKind, protoreflect.BoolKind,
		protoreflect.FloatKind, protoreflect.DoubleKind:
		return false
	}
	return true
}

// formatScalar formats a value of fd, whose kind k scalarKind accepts.
func formatScalar(fd protoreflect.FieldDescriptor, k protoreflect.Kind, v protoreflect.Value) string {
	switch k {
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.BytesKind:
		return string(v.Bytes())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.FormatUint(v.Uint(), 10)
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return strconv.FormatInt(int64(v.Enum()), 10)
	}
	return strconv.FormatInt(v.Int(), 10) // the signed integer kinds
}

// MetadataValue returns a JobIDFunc that reads the job ID from the call's
// incoming metadata (key is case-insensitive). Unlike Field it works for
// streams admitted before their first message. A key that is missing,
// empty or given more than once rejects the call with codes.InvalidArgument.
func MetadataValue(key string) JobIDFunc {
	key = strings.ToLower(key)
	return func(ctx context.Context, _ any) (string, error) {
		vs := metadata.ValueFromIncomingContext(ctx, key)
		switch {
		case len(vs) > 1:
			return "", status.Errorf(codes.InvalidArgument, "job ID metadata %q is given %d times", key, len(vs))
		case len(vs) == 0 || vs[0] == "":
			return "", status.Errorf(codes.InvalidArgument, "job ID metadata %q is missing or empty", key)
		}
		return vs[0], nil
	}
}
