//go:build !poolv2

package pool

import "errors"

// ErrNoMember means a record or a request names a device that is not in
// the pool. manager.go, in progress behind the poolv2 tag, declares it too:
// this file goes once manager.go lands.
var ErrNoMember = errors.New("no such member")
