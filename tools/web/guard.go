// Package web holds the tools that reach the web: web_fetch (a page as
// readable text) and web_search (pluggable search backends). Every outbound
// connection goes through a Guard that refuses private, loopback and
// link-local addresses on the address actually dialed, so a name that
// resolves (or re-resolves, DNS rebinding) to an internal address is refused
// too.
package web

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// ErrBlockedAddress is wrapped by every refusal of the Guard.
var ErrBlockedAddress = errors.New("address not allowed")

// Guard decides which addresses the web tools may connect to. The zero value
// refuses every non-public address.
type Guard struct {
	// AllowPrivate lets connections reach loopback, private and link-local
	// addresses (an operator setting, for a home lab or tests).
	AllowPrivate bool
	// Allow lets connections reach these ranges only (say, one LAN host),
	// when AllowPrivate is off.
	Allow []netip.Prefix
}

// blocked lists ranges that are not ordinary public unicast destinations
// and that netip's predicates do not cover.
var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT (shared address space)
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, broadcast
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2002::/16"),      // 6to4 can embed any IPv4, private ones included
	netip.MustParsePrefix("2001::/32"),      // Teredo embeds IPv4 as well
	netip.MustParsePrefix("::ffff:0:0/96"),  // IPv4-mapped (unmapped before the check; kept as a backstop)
	netip.MustParsePrefix("::/96"),          // IPv4-compatible (deprecated) embeds IPv4 too
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64 well-known prefix embeds IPv4
	netip.MustParsePrefix("ff00::/8"),       // multicast
	netip.MustParsePrefix("fc00::/7"),       // unique local
	netip.MustParsePrefix("fe80::/10"),      // link-local
	netip.MustParsePrefix("169.254.0.0/16"), // link-local, cloud metadata
	netip.MustParsePrefix("224.0.0.0/4"),    // multicast
	netip.MustParsePrefix("255.255.255.255/32"),
}

// Check returns nil if addr may be dialed, else an error wrapping
// ErrBlockedAddress that says why.
func (g Guard) Check(addr netip.Addr) error {
	if !addr.IsValid() {
		return fmt.Errorf("%w: invalid address", ErrBlockedAddress)
	}
	addr = addr.Unmap().WithZone("")
	if g.AllowPrivate {
		return nil
	}
	for _, p := range g.Allow {
		if p.Contains(addr) {
			return nil
		}
	}
	var why string
	switch {
	case addr.IsLoopback():
		why = "loopback"
	case addr.IsPrivate():
		why = "private"
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		why = "link-local"
	case addr.IsUnspecified():
		why = "unspecified"
	case addr.IsMulticast(), addr.IsInterfaceLocalMulticast():
		why = "multicast"
	default:
		for _, p := range blocked {
			if p.Contains(addr) {
				why = "reserved (" + p.String() + ")"
				break
			}
		}
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("%w: %s is %s (set HERMES_WEB_ALLOW_PRIVATE=on to allow)", ErrBlockedAddress, addr, why)
}

// Control is a net.Dialer Control function: it runs after the name was
// resolved and before the socket connects, on the very address being
// dialed, so no later resolution can swap in another one.
func (g Guard) Control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("%w: network %s", ErrBlockedAddress, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		host, _, serr := net.SplitHostPort(address)
		if serr != nil {
			return fmt.Errorf("%w: %q: %v", ErrBlockedAddress, address, err)
		}
		a, perr := netip.ParseAddr(host)
		if perr != nil {
			return fmt.Errorf("%w: %q: %v", ErrBlockedAddress, address, perr)
		}
		return g.Check(a)
	}
	return g.Check(ap.Addr())
}
