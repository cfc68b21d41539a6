package interceptors

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/realip"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fairseat/fairseat/admission"
	"github.com/fairseat/fairseat/internal/clientkey"
)

func TestBoundKey(t *testing.T) {
	long := "header:" + strings.Repeat("x", 200)
	for _, tc := range []struct {
		in, want string
	}{
		{"ip:203.0.113.7", "ip:203.0.113.7"},
		{"header:Zürich", "header:Zürich"},
		{"header:a\x00b", "header:sha256:"},
		{"header:\xff", "header:sha256:"},
		{"header:\u0085", "header:sha256:"}, // C1 control
		{"\x00ns:x", "sha256:"},             // no readable namespace
		{long, "header:sha256:"},
	} {
		got := clientkey.Bound(tc.in, 0)
		if !strings.HasPrefix(got, tc.want) || (!strings.HasSuffix(tc.want, "sha256:") && got != tc.want) {
			t.Errorf("clientkey.Bound(%q) = %q, want %q…", tc.in, got, tc.want)
		}
		if len(got) > clientkey.DefaultMaxLen || !printable(got) {
			t.Errorf("clientkey.Bound(%q) = %q: too long or not printable", tc.in, got)
		}
	}
	if clientkey.Bound("header:\xff", 0) == clientkey.Bound("header:\xfe", 0) {
		t.Error("distinct unprintable keys collide")
	}
}

// fuzzTrusted are the proxies of FuzzFairnessKey: they may set x-tenant-id
// and X-Forwarded-For.
var fuzzTrusted = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}

// FuzzFairnessKey derives keys from hostile calls: any peer address, huge
// or invalid metadata, forwarding headers from untrusted peers. Whatever
// comes in, a key is bounded, printable and namespaced; an untrusted peer's
// metadata changes nothing; IPv4-mapped addresses and IPv6 addresses in one
// prefix are one client.
func FuzzFairnessKey(f *testing.F) {
	f.Add([]byte{203, 0, 113, 7}, "acme", "198.51.100.4", true, uint8(63))
	f.Add([]byte{10, 1, 1, 1}, strings.Repeat("tenant", 50000), "1.2.3.4, 5.6.7.8", true, uint8(63))
	f.Add([]byte{10, 1, 1, 1}, "\xff\xfe\x00", "::1", false, uint8(0))
	f.Add(netip.MustParseAddr("::ffff:203.0.113.7").AsSlice(), "acme", "10.0.0.1", true, uint8(47))
	f.Add(netip.MustParseAddr("2001:db8::1").AsSlice(), "acme", "garbage, \xff", true, uint8(127))
	f.Add(netip.MustParseAddr("fd00::1").AsSlice(), "\u0085evil", strings.Repeat("9", 1<<16), true, uint8(63))
	f.Add([]byte("bufconn"), "acme", "", false, uint8(63))

	s, err := admission.New(admission.Config{Capacity: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, ip []byte, tenant, xff string, withRealIP bool, prefix uint8) {
		v6Prefix := int(prefix)%128 + 1
		c := newConfig(s, []Option{WithKeyFunc(FirstOf(
			TrustedMetadata("x-tenant-id", PeerIn(fuzzTrusted...)),
			ClientIP(v6Prefix)))})
		md := metadata.MD{"x-tenant-id": {tenant}, "x-forwarded-for": {xff}, "x-real-ip": {xff}}
		addr, isIP := netip.AddrFromSlice(ip)
		derive := func(a netip.Addr, md metadata.MD) (string, error) {
			return c.fairnessKey(fuzzCall(a, md, withRealIP))
		}

		key, err := derive(addr, md)
		if err == nil {
			if len(key) > clientkey.DefaultMaxLen || !utf8.ValidString(key) || !printable(key) {
				t.Fatalf("key %q: longer than %d bytes or not printable", key, clientkey.DefaultMaxLen)
			}
			if !strings.HasPrefix(key, "ip:") && !strings.HasPrefix(key, "header:") {
				t.Fatalf("key %q has no source namespace", key)
			}
		} else if isIP {
			t.Fatalf("no key for a peer at %v: %v", addr, err)
		} else if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("no key: %v, want InvalidArgument", err)
		}
		trusted := isIP && clientkey.Prefixes(fuzzTrusted).Contains(addr)
		if trusted {
			return
		}
		if bare, bareErr := derive(addr, nil); bare != key || (err == nil) != (bareErr == nil) {
			t.Fatalf("untrusted peer %v: key %q with its metadata, %q without", addr, key, bare)
		}
		switch {
		case addr.Is4In6():
			if k, _ := derive(addr.Unmap(), md); k != key {
				t.Fatalf("IPv4-mapped %v has key %q, unmapped %q", addr, key, k)
			}
		case addr.Is6() && v6Prefix < 128:
			b := addr.As16()
			b[15] ^= 1 // another address of the same /v6Prefix
			if k, _ := derive(netip.AddrFrom16(b), md); k != key {
				t.Fatalf("%v and its neighbour have keys %q and %q with prefix /%d", addr, key, k, v6Prefix)
			}
		}
	})
}

// fuzzCall is the context of a call from a (no IP address if invalid) with
// incoming metadata md, as our interceptor sees it after realip.
func fuzzCall(a netip.Addr, md metadata.MD, withRealIP bool) context.Context {
	var na net.Addr = &net.UnixAddr{Name: "@", Net: "unix"}
	if a.IsValid() {
		na = net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, 443))
	}
	ctx := metadata.NewIncomingContext(peer.NewContext(context.Background(), &peer.Peer{Addr: na}), md)
	if !withRealIP {
		return ctx
	}
	var out context.Context
	_, _ = realip.UnaryServerInterceptor(fuzzTrusted, []string{realip.XForwardedFor, realip.XRealIp})(ctx, nil,
		&grpc.UnaryServerInfo{}, func(ctx context.Context, _ any) (any, error) { out = ctx; return nil, nil })
	return out
}

// FuzzField reads job IDs out of arbitrary wire bytes: proto2 strings are
// not UTF-8 checked, so anything may arrive. Field never panics, agrees
// with the generated getters, and refuses unset and empty values.
func FuzzField(f *testing.F) {
	seed := func(m proto.Message) {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	seed(&descriptorpb.FieldDescriptorProto{Name: proto.String("repo"), Number: proto.Int32(-1),
		Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(),
		Options: &descriptorpb.FieldOptions{Ctype: descriptorpb.FieldOptions_CORD.Enum(),
			UninterpretedOption: []*descriptorpb.UninterpretedOption{{}}}})
	seed(&descriptorpb.FieldDescriptorProto{Name: proto.String("\xff\x00" + strings.Repeat("a", 1<<20))})
	seed(&descriptorpb.FieldDescriptorProto{Name: proto.String("")})
	f.Add([]byte{0x0a, 0x80}) // truncated
	f.Add([]byte{0x20, 0x09}) // label out of range: an unknown field in proto2

	type check struct {
		path string
		want func(m *descriptorpb.FieldDescriptorProto) (string, bool)
	}
	checks := []check{
		{"name", func(m *descriptorpb.FieldDescriptorProto) (string, bool) { return m.GetName(), m.GetName() != "" }},
		{"json_name", func(m *descriptorpb.FieldDescriptorProto) (string, bool) {
			return m.GetJsonName(), m.GetJsonName() != ""
		}},
		{"number", func(m *descriptorpb.FieldDescriptorProto) (string, bool) {
			return strconv.Itoa(int(m.GetNumber())), m.Number != nil
		}},
		{"label", func(m *descriptorpb.FieldDescriptorProto) (string, bool) {
			return m.GetLabel().String(), m.Label != nil
		}},
		{"options.ctype", func(m *descriptorpb.FieldDescriptorProto) (string, bool) {
			return m.GetOptions().GetCtype().String(), m.GetOptions() != nil && m.GetOptions().Ctype != nil
		}},
	}
	fields := make([]JobIDFunc, len(checks))
	for i, c := range checks {
		fields[i] = Field(c.path)
	}
	repeated := Field("options.uninterpreted_option")
	bytesField := Field("value")

	f.Fuzz(func(t *testing.T, data []byte) {
		m := new(descriptorpb.FieldDescriptorProto)
		if proto.Unmarshal(data, m) == nil {
			for i, c := range checks {
				got, err := fields[i](t.Context(), m)
				want, ok := c.want(m)
				switch {
				case ok && (err != nil || got != want):
					t.Fatalf("Field(%q) = %q, %v; the getter says %q", c.path, got, err, want)
				case !ok && status.Code(err) != codes.InvalidArgument:
					t.Fatalf("Field(%q) of an unset or empty field = %q, %v; want InvalidArgument", c.path, got, err)
				}
			}
			if _, err := repeated(t.Context(), m); status.Code(err) != codes.Internal {
				t.Fatalf("Field of a repeated field: %v, want Internal", err)
			}
		}
		b := new(wrapperspb.BytesValue)
		if proto.Unmarshal(data, b) == nil {
			got, err := bytesField(t.Context(), b)
			if len(b.GetValue()) > 0 && (err != nil || got != string(b.GetValue())) {
				t.Fatalf("Field(value) of bytes %q = %q, %v", b.GetValue(), got, err)
			}
			if len(b.GetValue()) == 0 && status.Code(err) != codes.InvalidArgument {
				t.Fatalf("Field(value) of empty bytes: %v, want InvalidArgument", err)
			}
		}
	})
}

// printable reports whether clientkey.Bound leaves s as it is when length
// is no concern: valid UTF-8 without control characters.
func printable(s string) bool { return clientkey.Bound(s, 1<<30) == s }
