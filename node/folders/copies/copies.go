// Package copies runs the copies between machines of a pool: the receiving
// machine pulls (Pull, the transfer engine: only the blocks it lacks,
// resuming from a partial file) from the sending one's folder server, so
// that bytes between two machines never pass through the one that asked.
//
// A Receiver does three things:
//
//   - Copy starts a copy on the member that receives it (POST /v1/transfers
//     there), or here when the destination is a local path, and offers a
//     local source to the receiver alone, for that one copy;
//   - Handler serves POST /v1/transfers and GET /v1/transfers/{id} to the
//     members, and runs the copies this machine receives;
//   - Transfers lists the copies started through this machine, kept in a
//     Store across restarts.
//
// Receiver.Run owns every goroutine of a copy: it returns only after all of
// them have exited, so nothing a copy does outlives it. CancelOf ends at
// once the copies of a device removed from the pool.
package copies

import (
	"errors"
	"strings"
	"time"
)

var (
	// ErrNotFound means no copy has that ID here.
	ErrNotFound = errors.New("not found")
	// ErrInvalid means a copy request cannot be carried out as written.
	ErrInvalid = errors.New("invalid request")
	// ErrStopped means the Receiver is not running (Run has returned).
	ErrStopped = errors.New("copies: the receiver has stopped")
)

// Transfer is a copy under way or ended, on the machine that receives it.
type Transfer struct {
	ID       string     `json:"id"`
	Node     string     `json:"node"` // the receiving machine, which runs it
	Src      string     `json:"src"`
	Dst      string     `json:"dst"`
	State    string     `json:"state"` // running, done, failed (unknown: the receiver does not answer)
	Error    string     `json:"error,omitempty"`
	Progress Progress   `json:"progress"`
	Started  time.Time  `json:"started"`
	Finished *time.Time `json:"finished"`
}

// ended reports whether a copy's state is final.
func (t Transfer) ended() bool { return t.State == "done" || t.State == "failed" }

// Request asks for a copy of Src to Dst; each is a local path or
// NODE:FOLDER[/PATH].
type Request struct {
	Src string `json:"src"`
	Dst string `json:"dst"`
}

// ParseRemote splits "NODE:FOLDER[/PATH]"; ok is false for a local path.
func ParseRemote(s string) (node, folder, path string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i <= 0 || strings.ContainsAny(s[:i], "/\\") {
		return "", "", "", false
	}
	node, rest := s[:i], s[i+1:]
	folder, path, _ = strings.Cut(rest, "/")
	return node, folder, path, folder != ""
}
