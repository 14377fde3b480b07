package containers

import (
	"slices"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// jobProfile builds the profile Seccomp returns (see there) from Docker's
// default profile, which builds on Linux only; seccomp.json holds its output.
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
