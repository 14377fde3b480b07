package discovery

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
)

// ErrBlocked means this machine could not open mDNS on any interface: the
// network or the OS keeps it from joining the multicast group.
var ErrBlocked = errors.New("mDNS is blocked on this network")

// joinFailure is how zeroconf v1.0.0 says that no interface joined the
// group ("udp4: failed to join any of these interfaces: [...]"); it has no
// error value to compare with.
const joinFailure = "failed to join any of these interfaces"

// Fallback is what to do when mDNS cannot find the pool's machines.
const Fallback = "other machines can still be added with `labpool pool join CODE HOST:7420`"

// blockedError says in one sentence that mDNS is blocked and what to do.
type blockedError struct {
	ifaces string // the interfaces tried
	advice string // what to change on this machine, if known
	err    error  // zeroconf's own words
}

func (e *blockedError) Error() string {
	s := fmt.Sprintf("%s (%s would not join the multicast group): %s", ErrBlocked, e.ifaces, Fallback)
	if e.advice != "" {
		s += "; " + e.advice
	}
	return s
}

func (e *blockedError) Is(target error) bool { return target == ErrBlocked }
func (e *blockedError) Unwrap() error        { return e.err }

// explainBlocked turns err, from opening mDNS sockets on ifaces, into a
// blockedError when it says multicast is refused, adding advice; any other
// error is returned as it is.
func explainBlocked(err error, ifaces []net.Interface, advice string) error {
	if err == nil || !blocked(err) {
		return err
	}
	return &blockedError{ifaces: interfaceNames(ifaces), advice: advice, err: err}
}

// blocked reports whether err means the OS or the network refuses
// multicast here (every interface refused the group, or a sandbox or
// firewall refused the socket).
func blocked(err error) bool {
	return strings.Contains(err.Error(), joinFailure) ||
		errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)
}

// blockedAll is explainBlocked for several attempts (one per IP family):
// blocked only when each one is.
func blockedAll(ifaces []net.Interface, advice string, errs ...error) error {
	joined := errors.Join(errs...)
	for _, err := range errs {
		if err == nil || !blocked(err) {
			return joined
		}
	}
	return explainBlocked(joined, ifaces, advice)
}
