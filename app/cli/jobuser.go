package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/labpool/labpool/node/jobs"
)

// writeRWNote says, when a job mounts shared folders read-write, which
// user it writes as (README, "A job's isolation"): the machine decides, so
// this is the rule, not a promise about one machine.
func writeRWNote(w io.Writer, mounts []jobs.Mount, node string) {
	var rw []string
	for _, m := range mounts {
		if m.ReadWrite {
			rw = append(rw, m.Folder)
		}
	}
	if len(rw) == 0 {
		return
	}
	fmt.Fprintf(w, "note: this job writes into %s on %s as the folder's owner when that is not root, else as uid 65534 (nobody);"+
		" what it writes belongs to that user on the host (where the machine's Docker remaps users, to its remapped user instead)\n",
		strings.Join(rw, ", "), node)
}

// shareRWNote says, for a folder shared read-write, which user jobs write
// into it as, read from the directory's owner on this machine.
func shareRWNote(w io.Writer, path, name string) {
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	uid, ok := fileUID(fi)
	if !ok {
		return
	}
	if uid == 0 {
		fmt.Fprintf(w, "note: %s belongs to root, so a job that mounts %s read-write writes as the machine's job user (uid 65534, nobody, by default), and so does a copy into it:"+
			" the folder's group is now that user's, group-writable (chown the folder to a user for jobs and copies to write as that user)\n", path, name)
		return
	}
	fmt.Fprintf(w, "note: a job that mounts %s read-write writes as %s's owner (uid %d):"+
		" its files there belong to that user, who can read, change and delete them, and the job can change or delete that user's files in the folder\n", name, path, uid)
}
