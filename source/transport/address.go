package transport

import "net/netip"

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// PublicAddr reports whether ip is a public unicast address: not loopback, private (RFC 1918,
// fc00::/7), link-local (169.254/16, fe80::/10: cloud metadata), CGNAT (100.64/10),
// "this network" (0/8), multicast or unspecified; an IPv4-mapped IPv6 address is judged as
// its IPv4. It is the one check of every dial the operator refuses to make into a private
// network (the registry client, a registered cluster's apiserver).
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsValid() && ip.IsGlobalUnicast() && !ip.IsPrivate() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() &&
		!cgnat.Contains(ip) && !thisNetwork(ip)
}

// thisNetwork: 0.0.0.0/8, "this network" (RFC 791), which Linux dials as loopback.
func thisNetwork(ip netip.Addr) bool { return ip.Is4() && ip.As4()[0] == 0 }
