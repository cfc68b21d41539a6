package httpmw

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/fairseat/fairseat/internal/clientkey"
)

// maxHops bounds the forwarding hops examined, so a hostile header costs
// bounded work past parsing.
const maxHops = 64

// ForwardedClient returns the client address of a request that arrived from
// peer. If peer is not in trusted, the forwarding headers are ignored and
// peer is the client: anyone can write them. Otherwise the hops of the
// Forwarded header (RFC 7239, preferred when present) or X-Forwarded-For are
// walked from the right — the entry the trusted peer itself appended — and
// the first hop not in trusted is the client; if every hop is trusted, the
// leftmost is. A malformed header, an unparsable hop ("unknown", an
// obfuscated identifier, a host name) or more than 64 hops before an
// untrusted one make the peer the client.
func ForwardedClient(peer netip.Addr, h http.Header, trusted []netip.Prefix) netip.Addr {
	ps := clientkey.Prefixes(trusted)
	if !ps.Contains(peer) {
		return peer
	}
	hops, ok := forwardedHops(h)
	if !ok || len(hops) == 0 {
		return peer
	}
	client := peer
	for i, n := len(hops)-1, 0; i >= 0; i, n = i-1, n+1 {
		if n == maxHops {
			return peer
		}
		a, ok := clientkey.ParseAddr(hops[i])
		if !ok {
			return peer
		}
		client = a
		if !ps.Contains(a) {
			return a
		}
	}
	return client
}

// forwardedHops lists the client addresses a request's forwarding headers
// name, leftmost first. ok is false when a header is malformed.
func forwardedHops(h http.Header) (hops []string, ok bool) {
	if vs := h.Values("Forwarded"); len(vs) > 0 {
		return parseForwarded(vs)
	}
	for _, v := range h.Values("X-Forwarded-For") {
		for hop := range strings.SplitSeq(v, ",") {
			hop = strings.TrimSpace(hop)
			if hop == "" {
				return nil, false
			}
			hops = append(hops, hop)
		}
	}
	return hops, true
}

// parseForwarded extracts the for= parameter of every element of the
// Forwarded header values (RFC 7239 §4): elements separated by commas, pairs
// by semicolons, values tokens or quoted strings. An element without for=,
// an unterminated quote or a pair without "=" is malformed.
func parseForwarded(values []string) (hops []string, ok bool) {
	for _, v := range values {
		var forValue string
		haveFor := false
		i := 0
		for {
			// one pair: name=value
			for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
				i++
			}
			eq := strings.IndexByte(v[i:], '=')
			if eq <= 0 {
				return nil, false
			}
			name := strings.ToLower(strings.TrimSpace(v[i : i+eq]))
			i += eq + 1
			var val string
			if i < len(v) && v[i] == '"' {
				end := i + 1
				var b strings.Builder
				for end < len(v) && v[end] != '"' {
					if v[end] == '\\' && end+1 < len(v) {
						end++
					}
					b.WriteByte(v[end])
					end++
				}
				if end >= len(v) {
					return nil, false // unterminated quoted string
				}
				val, i = b.String(), end+1
			} else {
				end := i
				for end < len(v) && v[end] != ';' && v[end] != ',' {
					end++
				}
				val, i = strings.TrimSpace(v[i:end]), end
			}
			if name == "for" {
				forValue, haveFor = val, true
			}
			for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
				i++
			}
			if i >= len(v) || v[i] == ',' {
				if !haveFor {
					return nil, false
				}
				hops = append(hops, forValue)
				forValue, haveFor = "", false
				if i >= len(v) {
					break
				}
				i++ // next element
				continue
			}
			if v[i] != ';' {
				return nil, false
			}
			i++ // next pair of the same element
		}
	}
	return hops, true
}
