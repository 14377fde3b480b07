package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// A record is what the executor keeps of each job it submitted, as one
// JSON file in its state directory: the labels and ports Slurm cannot
// hold, and the last state it saw. Slurm forgets an ended job MinJobAge
// (300 s by default) after it ends when it has no accounting; the record
// keeps its end for labpool. What is lost when both forget: a job that
// ended while no agent watched, longer than MinJobAge before the agent
// came back, reads as failed with its exit code unknown.
type record struct {
	Handle    string            `json:"handle"`
	JobID     string            `json:"job_id"`
	Owner     string            `json:"owner"`
	User      string            `json:"user,omitempty"` // the job's Unix account; "" before job accounts: the agent's
	Labels    map[string]string `json:"labels,omitempty"`
	Ports     []int             `json:"ports,omitempty"`
	Script    string            `json:"script,omitempty"` // before job accounts: the script's file
	Output    string            `json:"output"`
	CPUs      float64           `json:"cpus,omitempty"`
	MemoryB   int64             `json:"memory_bytes,omitempty"`
	Submitted time.Time         `json:"submitted"`
	// Last is the last status seen; Final says that it is the job's end.
	Last  jobs.TaskStatus `json:"last"`
	Final bool            `json:"final,omitempty"`
	// Removed marks a tombstone: the job was removed (its files are
	// gone) while Slurm may still list it; the executor no longer
	// reports it, and drops the tombstone once Slurm forgets the job.
	Removed bool `json:"removed,omitempty"`
}

// validHandle says whether h is a Slurm job ID: digits, and "_" for an
// array task. Nothing else reaches a path or a command line.
func validHandle(h string) bool {
	if h == "" || len(h) > 32 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return h[0] != '_'
}

func errHandle(h string) error {
	return fmt.Errorf("slurm: handle %q: a Slurm job ID is digits: %w", h, jobs.ErrTaskGone)
}

func (e *Executor) recordPath(handle string) string {
	return filepath.Join(e.cfg.StateDir, "jobs", handle+".json")
}

// save writes r, atomically.
func (e *Executor) save(r *record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	path := e.recordPath(r.Handle)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("save slurm job %s: %w", r.Handle, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save slurm job %s: %w", r.Handle, err)
	}
	return nil
}

// load reads every record of the state directory.
func (e *Executor) load() (map[string]*record, error) {
	dir := filepath.Join(e.cfg.StateDir, "jobs")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read slurm state: %w", err)
	}
	recs := map[string]*record{}
	for _, ent := range entries {
		h, ok := strings.CutSuffix(ent.Name(), ".json")
		if !ok || !validHandle(h) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			return nil, fmt.Errorf("read slurm state: %w", err)
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil || r.Handle != h {
			e.log.Warn("slurm: unreadable job record, skipped", "file", ent.Name(), "err", err)
			continue
		}
		recs[h] = &r
	}
	return recs, nil
}

// forget deletes r's files (and, with its record, the record's);
// what is already gone is not an error. The output is its account's
// file, in its account's directory: the account removes it.
func (e *Executor) forget(ctx context.Context, r *record, withRecord bool) error {
	var errs []error
	paths := []string{r.Script}
	if r.User == "" {
		paths = append(paths, r.Output) // before job accounts: the agent's file
	} else if r.Output != "" {
		if _, err := e.run.RunAs(ctx, As{User: r.User}, "rm", "-f", "--", r.Output); err != nil {
			errs = append(errs, err)
		}
	}
	if withRecord {
		paths = append(paths, e.recordPath(r.Handle))
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
