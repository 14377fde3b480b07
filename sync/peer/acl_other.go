//go:build !windows

package peer

// RestrictToOwner does nothing outside Windows: there the data directory's
// mode (0700) and the socket's (0600) keep other users out.
func RestrictToOwner(string, bool) error { return nil }
