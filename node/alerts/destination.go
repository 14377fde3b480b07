package alerts

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// ErrWebhookRefused is a webhook post this machine refuses to make: its
// destination (WebhookRuleDestination) or a redirect (WebhookRuleRedirect).
var ErrWebhookRefused = errors.New("refused")

// The rules a refused post names.
const (
	WebhookRuleDestination = "webhook_destination"
	WebhookRuleRedirect    = "webhook_no_redirect"
)

// WebhookPolicy is this machine's own say over the pool's webhook, from its
// local policy (`labpool policy`): the pool's admins set the URL, the
// machine's user decides whether and where it posts.
type WebhookPolicy struct {
	Off     bool // post nothing from this machine
	Private bool // let posts reach private addresses (a chat server on the lab's network)
}

// metadata are the cloud providers' instance metadata and host services
// outside the link-local range.
var metadata = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),   // AWS, over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("168.63.129.16"),   // Azure wire server
}

// sharedRange is the carrier-grade NAT range (also Tailscale's), private
// like 10/8 though net/netip does not say so; nat64 embeds IPv4 addresses.
var (
	sharedRange = netip.MustParsePrefix("100.64.0.0/10")
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
)

// CheckDestination refuses a webhook post to ip: this machine's loopback,
// unspecified, link-local (169.254.169.254 is the cloud metadata service),
// multicast and broadcast addresses and the other cloud metadata addresses
// always; private ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7)
// unless private. The error names the rule.
func CheckDestination(ip netip.Addr, private bool) error {
	ip = ip.Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	what := ""
	switch {
	case ip.IsLoopback():
		what = "this machine's loopback"
	case ip.IsUnspecified():
		what = "an unspecified address (this machine)"
	case ip.IsLinkLocalUnicast():
		what = "a link-local address (cloud metadata lives at 169.254.169.254)"
	case ip.IsMulticast() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		what = "a multicast or broadcast address"
	case isMetadata(ip):
		what = "a cloud metadata address"
	case !private && (ip.IsPrivate() || sharedRange.Contains(ip)):
		return fmt.Errorf("%w: %s is a private address (rule: %s: a webhook post reaches a private address only where "+
			"this machine's policy allows it: labpool policy --webhook-private allow)", ErrWebhookRefused, ip, WebhookRuleDestination)
	default:
		return nil
	}
	return fmt.Errorf("%w: %s is %s (rule: %s: a webhook post never reaches this machine's loopback, link-local, "+
		"multicast or cloud metadata addresses)", ErrWebhookRefused, ip, what, WebhookRuleDestination)
}

func isMetadata(ip netip.Addr) bool {
	for _, m := range metadata {
		if ip == m {
			return true
		}
	}
	return false
}

// control is the webhook dialler's net.Dialer.Control: it checks the
// address the name resolved to, just before connecting, so a name that
// resolves elsewhere at a second lookup (DNS rebinding) cannot pass.
func (w *Webhook) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: dial %s %q (rule: %s: an IP address and port)", ErrWebhookRefused, network, address, WebhookRuleDestination)
	}
	return w.check(ap.Addr(), w.policy().Private)
}
