package slurm

import (
	"fmt"
	"strings"
)

// A job labpool submits carries a marker in its Slurm comment:
//
//	labpool:job=<labpool job ID>,owner=<device ID of the member>
//
// for people reading the queue: who launched each. It proves nothing (a
// job of any account may write one): a job is labpool's by the
// executor's record (see ours). IDs are restricted to [A-Za-z0-9._-] so
// that the marker parses one way only.
const commentPrefix = "labpool:"

// maxIDLen is the longest job or owner ID the marker carries.
const maxIDLen = 128

// validID says whether s may stand in the marker.
func validID(s string) bool { return plainName(s, maxIDLen) }

// plainName says whether s is 1 to max ASCII letters, digits, '.', '_'
// and '-': a word that reaches Slurm's command lines and markers as it is.
func plainName(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// Comment is the marker for a job and its owner.
func Comment(jobID, owner string) (string, error) {
	if !validID(jobID) {
		return "", fmt.Errorf("slurm: job ID %q: a job ID in a Slurm comment is 1 to %d of [A-Za-z0-9._-]", jobID, maxIDLen)
	}
	if !validID(owner) {
		return "", fmt.Errorf("slurm: owner %q: an owner in a Slurm comment is 1 to %d of [A-Za-z0-9._-]", owner, maxIDLen)
	}
	return commentPrefix + "job=" + jobID + ",owner=" + owner, nil
}

// ParseComment reads the marker; a comment that is not exactly one
// (another tool's, a hand-written one) gives "", "".
func ParseComment(c string) (jobID, owner string) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(c), commentPrefix)
	if !ok {
		return "", ""
	}
	j, o, ok := strings.Cut(rest, ",")
	if !ok {
		return "", ""
	}
	jobID, ok1 := strings.CutPrefix(j, "job=")
	owner, ok2 := strings.CutPrefix(o, "owner=")
	if !ok1 || !ok2 || !validID(jobID) || !validID(owner) {
		return "", ""
	}
	return jobID, owner
}
