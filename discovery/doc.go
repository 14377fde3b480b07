// Package discovery finds labpool peers on the local network with mDNS
// (DNS-SD service "_labpool._udp" in "local.", through
// github.com/grandcat/zeroconf).
//
// An Announcer publishes this machine: an SRV record pointing at a host name
// of our own (cloned machines share the OS host name), the IPv4 and IPv6
// addresses of the selected interfaces, and a TXT record "id=<device ID>",
// "v=<API version>", "port=<QUIC port>" and, once in a pool, "pool=<pool ID>".
// A Browser queries the network every Config.Interval and reports each answer
// as a Candidate.
//
// Results are hints, not identities: a Candidate's ID is what the network
// claimed; sync/transport proves it during the TLS handshake. The library
// reports no removals and stops re-querying after its first answer, so the
// Browser re-browses on its own and liveness comes from QUIC, not from here.
//
// Announcer.Run and Browser.Run block until ctx is cancelled and return only
// after every goroutine they started has exited. (zeroconf starts a few of its
// own that it does not let anyone wait for: they stop on their own once their
// sockets are closed, the last, its announcement loop, within about 3.5 s of
// a registration.)
package discovery
