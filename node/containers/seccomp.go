package containers

import (
	"bytes"
	_ "embed" // seccomp.json
	"encoding/json"
	"sync"
)

// setIDBits are S_ISUID and S_ISGID: a file carrying either runs, on the
// host, with its owner's or group's rights for whoever executes it.
const setIDBits = 0o6000

// modeArg is, for each syscall that sets a file's mode, the index of its
// mode argument.
var modeArg = map[string]uint{
	"chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2,
	"creat": 1, "open": 2, "openat": 3,
	"mkdir": 1, "mkdirat": 2, "mknod": 1, "mknodat": 2,
}

// Seccomp returns the seccomp profile every job runs under, as the JSON
// the engine takes in "seccomp=<profile>": Docker's default profile, except
// that no syscall can give a file a setuid or setgid bit.
//
// The syscalls of modeArg are taken out of the default profile's
// unconditional allow rules and allowed again only when their mode has
// neither bit (SCMP_CMP_MASKED_EQ mode&06000 == 0); any other mode falls to
// the profile's default action, EPERM. openat2 carries its mode inside a
// struct that seccomp cannot read: it fails with ENOSYS, and C libraries
// fall back to openat. There is no deny rule to race an allow rule: the
// only allow rule for these syscalls is the conditional one.
func Seccomp() string {
	seccompOnce.Do(func() {
		var b bytes.Buffer
		if err := json.Compact(&b, seccompFile); err != nil {
			panic("compact the seccomp profile: " + err.Error()) // embedded data: a bug
		}
		seccompJSON = b.String()
	})
	return seccompJSON
}

// seccompFile is jobProfile's output, written by TestSeccompFileIsJobProfile
// (LABPOOL_UPDATE_SECCOMP=1) on Linux, where Docker's default profile
// builds, and embedded so that an agent on macOS or Windows, whose engine
// runs in a Linux VM, gives its jobs the same profile.
//
//go:embed seccomp.json
var seccompFile []byte

var (
	seccompOnce sync.Once
	seccompJSON string
)
