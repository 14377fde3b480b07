package containers

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
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
		b, err := json.Marshal(jobProfile())
		if err != nil {
			panic("encode the seccomp profile: " + err.Error()) // static data: a bug
		}
		seccompJSON = string(b)
	})
	return seccompJSON
}

var (
	seccompOnce sync.Once
	seccompJSON string
)

func jobProfile() *seccomp.Seccomp {
	p := seccomp.DefaultProfile()
	guarded := func(n string) bool { _, ok := modeArg[n]; return ok || n == "openat2" }
	for _, s := range p.Syscalls {
		if s.Action == specs.ActAllow && len(s.Args) == 0 {
			s.Names = slices.DeleteFunc(slices.Clone(s.Names), guarded)
		}
	}
	p.Syscalls = slices.DeleteFunc(p.Syscalls, func(s *seccomp.Syscall) bool { return len(s.Names) == 0 && s.Name == "" })
	names := make([]string, 0, len(modeArg))
	for n := range modeArg {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p.Syscalls = append(p.Syscalls, &seccomp.Syscall{
			LinuxSyscall: specs.LinuxSyscall{Names: []string{n}, Action: specs.ActAllow,
				Args: []specs.LinuxSeccompArg{{Index: modeArg[n], Value: setIDBits, ValueTwo: 0, Op: specs.OpMaskedEqual}}},
			Comment: "labpool: no setuid or setgid bit on any file",
		})
	}
	nosys := uint(38) // ENOSYS
	p.Syscalls = append(p.Syscalls, &seccomp.Syscall{
		LinuxSyscall: specs.LinuxSyscall{Names: []string{"openat2"}, Action: specs.ActErrno, ErrnoRet: &nosys},
		Comment:      "labpool: openat2's mode is out of seccomp's sight; libc falls back to openat",
	})
	return p
}
