//go:build !windows

package discovery

import "context"

// networkAdvice has nothing to say outside Windows: macOS and Linux mark no
// network as one whose firewall drops mDNS.
func networkAdvice(context.Context) string { return "" }
