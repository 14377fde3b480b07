package discovery

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/grandcat/zeroconf"
)

// ghost is an interface that does not exist: joining the mDNS group on it
// fails as on a network that refuses multicast.
var ghost = net.Interface{Index: 1 << 20, Name: "ghost0", Flags: net.FlagUp | net.FlagMulticast}

func TestBlockedFromZeroconf(t *testing.T) {
	ifaces := []net.Interface{ghost}
	_, err4 := zeroconf.NewResolver(zeroconf.SelectIfaces(ifaces), zeroconf.SelectIPTraffic(zeroconf.IPv4))
	_, err6 := zeroconf.NewResolver(zeroconf.SelectIfaces(ifaces), zeroconf.SelectIPTraffic(zeroconf.IPv6))
	if err4 == nil || err6 == nil {
		t.Fatalf("zeroconf joined the group on a missing interface: %v, %v", err4, err6)
	}
	err := blockedAll(ifaces, "", err4, err6)
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("blockedAll(%v, %v) = %v; want ErrBlocked", err4, err6, err)
	}
	const want = "mDNS is blocked on this network (ghost0 would not join the multicast group): " +
		"other machines can still be added with `labpool pool join CODE HOST:7420`"
	if got := err.Error(); got != want {
		t.Errorf("message = %q\nwant        %q", got, want)
	}
	if !strings.Contains(errors.Unwrap(err).Error(), joinFailure) {
		t.Errorf("zeroconf's words are lost: %v", errors.Unwrap(err))
	}
}

func TestBlockedAll(t *testing.T) {
	join := fmt.Errorf("udp4: %s: [{...}]", joinFailure)
	inUse := fmt.Errorf("listen udp4 224.0.0.0:5353: %w", syscall.EADDRINUSE)
	denied := fmt.Errorf("listen udp6 [ff02::]:5353: %w", syscall.EACCES)
	tests := []struct {
		name    string
		errs    []error
		blocked bool
	}{
		{"both refused", []error{join, join}, true},
		{"refused and denied", []error{join, denied}, true},
		{"port taken", []error{inUse, join}, false},
		{"one family works", []error{join, nil}, false},
		{"no error", []error{nil, nil}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := blockedAll([]net.Interface{{Name: "en0"}}, "set it Private", tt.errs...)
			if got := errors.Is(err, ErrBlocked); got != tt.blocked {
				t.Fatalf("blockedAll(%v) = %v; blocked %v, want %v", tt.errs, err, got, tt.blocked)
			}
			if tt.blocked && !strings.HasSuffix(err.Error(), "; set it Private") {
				t.Errorf("advice missing: %q", err)
			}
			for _, e := range tt.errs {
				if e != nil && !errors.Is(err, e) {
					t.Errorf("blockedAll(%v) = %v: the cause %v is lost", tt.errs, err, e)
				}
			}
		})
	}
}
