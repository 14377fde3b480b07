package folders

import (
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// DefaultJobUser is the unprivileged host user jobs run as where nothing
// else says (jobs.DefaultJobUser: nobody).
const DefaultJobUser = "65534:65534"

// Owner is the host user a share's files belong to: its folder user.
type Owner struct{ UID, GID int }

// FolderUser is the one ownership rule of a read-write share's files: they
// belong to the owner of the share's directory (with the job user's group
// where its group is root's), or, where that owner is root, to jobUser
// ("uid:gid", the machine's job user; "" is DefaultJobUser). Jobs that
// mount it read-write run as this user (node/jobs runAs, the same rule),
// copies into it write as this user, and a root-owned directory is given
// to its group, group-writable, when it is shared read-write.
func FolderUser(dir, jobUser string) (Owner, error) {
	if jobUser == "" {
		jobUser = DefaultJobUser
	}
	ju, jg, ok := strings.Cut(jobUser, ":")
	juid, err1 := strconv.Atoi(ju)
	jgid, err2 := strconv.Atoi(jg)
	if !ok || err1 != nil || err2 != nil {
		return Owner{}, fmt.Errorf("job user %q: want a numeric uid:gid", jobUser)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return Owner{}, err
	}
	uid, gid, ok := statOwner(fi)
	if !ok {
		return Owner{}, fmt.Errorf("the owner of %s: not known on this system", dir)
	}
	switch {
	case uid == 0:
		return Owner{UID: juid, GID: jgid}, nil
	case gid == 0:
		return Owner{UID: uid, GID: jgid}, nil
	}
	return Owner{UID: uid, GID: gid}, nil
}

// giveRootDir makes the root-owned directory dir of a read-write share
// writable by the folder user o: its group becomes o's and group-writable
// (the owner keeps it). It does nothing unless this process is root, nor
// to a directory of another owner (its owner is the folder user).
func giveRootDir(dir string, o Owner) error {
	fi, err := os.Stat(dir)
	if err != nil || os.Geteuid() != 0 {
		return err
	}
	uid, gid, ok := statOwner(fi)
	if !ok || uid != 0 {
		return nil
	}
	if gid != o.GID {
		if err := os.Chown(dir, 0, o.GID); err != nil {
			return fmt.Errorf("give %s's group to the folder user: %w", dir, err)
		}
	}
	if fi.Mode().Perm()&0o070 != 0o070 {
		if err := os.Chmod(dir, fi.Mode().Perm()|0o070); err != nil {
			return fmt.Errorf("make %s group-writable: %w", dir, err)
		}
	}
	return nil
}

// ChownTree gives what a copy wrote at p under root (p and everything
// under it, links not followed) to the folder user o. It does nothing
// unless this process is root: otherwise the files are already its own.
func ChownTree(root *os.Root, p string, o Owner) error {
	if os.Geteuid() != 0 {
		return nil
	}
	return fs.WalkDir(root.FS(), p, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name == p {
				return err
			}
			return nil // removed meanwhile
		}
		if err := root.Lchown(name, o.UID, o.GID); err != nil {
			return fmt.Errorf("give %s to the folder user %d:%d: %w", name, o.UID, o.GID, err)
		}
		return nil
	})
}
