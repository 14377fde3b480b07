//go:build !linux

package containers

// firewall is unused where Docker runs in a virtual machine.
type firewall []string

func defaultFirewalls() []firewall { return nil }

// guardHost does nothing where Docker runs in a virtual machine (macOS,
// Windows): its containers do not share the host's network stack.
func (r *Runtime) guardHost() error { return nil }

func (r *Runtime) keepGuardFirst() error { return nil }

func (r *Runtime) guardCheck(string) {}
