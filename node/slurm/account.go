package slurm

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
)

// An account is a Unix user that labpool's Slurm jobs run as: the
// cluster's job account (Config.JobUser, "labpool-jobs"), or a member's
// own account that the cluster machine's owner mapped them to. The agent
// submits, cancels and reads each job as its account (see AsRunner), so
// a job holds only what its account holds: never the agent's user, its
// data directory, key or socket.
type account struct {
	Name   string
	UID    uint32
	GID    uint32
	Groups []uint32 // supplementary groups, GID included
	Home   string   // where its jobs run (--chdir) and write (OutDir)
}

// outDir is where the account's jobs write their output (sbatch
// --output): a directory of the account's home, which the compute nodes
// share on a real cluster.
func (a account) outDir() string { return filepath.Join(a.Home, ".labpool-slurm") }

// validUserName says whether s may name a Unix account here: it reaches
// argv (sudo -u, setpriv) and never starts with '-'.
func validUserName(s string) bool { return plainName(s, 64) && s[0] != '-' }

// ErrJobAccount means a job account breaks a rule of job accounts; the
// message names it.
var ErrJobAccount = errors.New("slurm: job account refused")

// lookupAccount reads name from the user database and checks that it may
// run jobs for an agent run by self: not root, not the agent's user
// (rule "a job account is not the agent's user").
func lookupAccount(name string, self *user.User) (account, error) {
	if !validUserName(name) {
		return account{}, fmt.Errorf("%w: %q is not a Unix user name ([A-Za-z0-9._-], not starting with '-')", ErrJobAccount, name)
	}
	u, err := user.Lookup(name)
	if err != nil {
		return account{}, fmt.Errorf("%w: look up Unix user %q: %v", ErrJobAccount, name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return account{}, fmt.Errorf("%w: Unix user %q: %v", ErrJobAccount, name, err)
	}
	if uid == 0 {
		return account{}, fmt.Errorf("%w: %q is root: a job account is an ordinary user (rule: a job account is not the agent's user)", ErrJobAccount, name)
	}
	if self != nil && (u.Uid == self.Uid || u.Username == self.Username) {
		return account{}, fmt.Errorf("%w: %q is the agent's own user: jobs would reach its data directory, key and socket (rule: a job account is not the agent's user)", ErrJobAccount, name)
	}
	a := account{Name: u.Username, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
	gids, err := u.GroupIds()
	if err != nil {
		return account{}, fmt.Errorf("%w: groups of Unix user %q: %v", ErrJobAccount, name, err)
	}
	for _, g := range append([]string{u.Gid}, gids...) {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			a.Groups = append(a.Groups, uint32(n))
		}
	}
	if a.Home == "" || !filepath.IsAbs(a.Home) {
		return account{}, fmt.Errorf("%w: Unix user %q has no home directory: its jobs run and write there", ErrJobAccount, name)
	}
	return a, nil
}

// inGroup says whether gid is one of a's groups.
func (a account) inGroup(gid uint32) bool {
	for _, g := range a.Groups {
		if g == gid {
			return true
		}
	}
	return false
}

// CheckClosed checks that the account cannot read, list or traverse any
// of paths (the agent's data directory, its Slurm state): each is owned
// by another user and its mode grants the account nothing, through its
// group or others (rule "the agent's data is closed to job accounts").
// POSIX ACLs are not read: a directory with an ACL that opens it is
// still refused by nothing here.
func (a account) checkClosed(paths ...string) error {
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("check %s is closed to job account %s: %w", p, a.Name, err)
		}
		uid, gid, ok := fileOwner(fi)
		if !ok {
			return fmt.Errorf("check %s is closed to job account %s: no owner to read", p, a.Name)
		}
		var open bool
		switch mode := fi.Mode().Perm(); {
		case uid == a.UID:
			open = true
		case a.inGroup(gid):
			open = mode&0o050 != 0
		default:
			open = mode&0o005 != 0
		}
		if open {
			return fmt.Errorf("%w: %s (mode %04o, owner %d, group %d) is open to job account %s: make it the agent's own, mode 0700 (rule: the agent's data is closed to job accounts)",
				ErrJobAccount, p, fi.Mode().Perm(), uid, gid, a.Name)
		}
	}
	return nil
}
