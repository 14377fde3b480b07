//go:build !linux

package containers

// guardHost does nothing where Docker runs in a virtual machine (macOS,
// Windows): its containers do not share the host's network stack.
func (r *Runtime) guardHost() error { return nil }
