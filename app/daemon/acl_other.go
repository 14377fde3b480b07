//go:build !windows

package daemon

// restrictToOwner does nothing outside Windows: there the data directory's
// mode (0700) and the socket's (0600) keep other users out.
func restrictToOwner(string, bool) error { return nil }
