package store

import (
	"github.com/labpool/labpool/sync/schema"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Durability. The replica runs in WAL mode, so a crash of the process
// (even SIGKILL) never loses a committed transaction: the WAL is in the
// kernel's page cache when COMMIT returns. What a power cut or a kernel
// crash may lose depends on the write's class:
//
//   - control records (jobs, grants, membership, alerts, folders, settings:
//     every record not history) commit with synchronous=FULL: the WAL is
//     fsynced before Append, PutMember, SavePool or SetSetting returns, so
//     an acknowledged change survives a power cut;
//   - history (kinds "sample.*") commits with synchronous=NORMAL: at most the
//     samples since the last fsync (a checkpoint, or the next control write)
//     are lost on a power cut, never on a crash of the process;
//   - records replicated from others (Put) are NORMAL too: their origin holds
//     them, and the cursor commits with them, so a lost copy is fetched again.
//
// A full disk degrades history, never control records. A reserve file
// (replica.db.reserve, Options.ReserveBytes) holds space back. When a write
// fails with SQLITE_FULL, history pauses: Append of samples fails at once
// with ErrHistoryPaused, and Put skips history records (keeping their origin's
// cursor below them, so they are fetched again). A control write that hits
// the full disk releases the reserve and is retried, so it lands. History
// resumes by itself once the file system has room again for twice the
// reserve (checked at most every Options.ResumeEvery, when history is
// written): the reserve is made again first.

// ErrHistoryPaused means the disk is full: history (samples) is not written
// until space returns, while control records still are.
var ErrHistoryPaused = errors.New("disk full: history paused until space returns")

// HistoryKindPrefix starts the kind of every history record (samples of every
// tier). They are the records a full disk drops; every other kind is a
// control record.
const HistoryKindPrefix = schema.HistoryPrefix

// IsHistoryKind reports whether records of kind are history.
func IsHistoryKind(kind string) bool { return schema.IsHistory(kind) }

// Options tune a replica. The zero value is the defaults.
type Options struct {
	// ReserveBytes is the space held back for control records on a full
	// disk (default DefaultReserveBytes; below 0: none).
	ReserveBytes int64
	// ResumeEvery bounds how often paused history checks for space
	// (default 5 s).
	ResumeEvery time.Duration
	// OriginQuota bounds the bytes (keys and data) held of one other
	// origin: Receive refuses its records past it (default
	// schema.OriginQuota).
	OriginQuota int64
	// ControlQuota bounds the bytes of control records held of one
	// origin, inside OriginQuota (default schema.ControlQuota).
	ControlQuota int64
}

// DefaultReserveBytes is the default reserve: room for a checkpoint of the
// whole WAL (walPages pages of 4 KiB) and thousands of control records.
const DefaultReserveBytes = 8 << 20

// walPages is the WAL's size, in pages, that starts a checkpoint
// (wal_autocheckpoint); 1 MiB, well under the reserve.
const walPages = 256

func (o Options) withDefaults() Options {
	if o.ReserveBytes == 0 {
		o.ReserveBytes = DefaultReserveBytes
	}
	if o.ReserveBytes < 0 {
		o.ReserveBytes = 0
	}
	if o.OriginQuota <= 0 {
		o.OriginQuota = schema.OriginQuota
	}
	if o.ControlQuota <= 0 {
		o.ControlQuota = schema.ControlQuota
	}
	if o.ResumeEvery <= 0 {
		o.ResumeEvery = 5 * time.Second
	}
	return o
}

// class is how a write is made durable and what a full disk does to it.
type class int

const (
	classHistory class = iota // NORMAL; refused while paused; never releases the reserve
	classControl              // FULL; releases the reserve on a full disk
	classReplica              // NORMAL; history in it skipped while paused; releases the reserve
	classUpkeep               // NORMAL (prune): runs while paused; never releases the reserve
)

// classOf is the class of appending recs: history when every one is.
func classOf(recs []Record) class {
	for _, r := range recs {
		if !IsHistoryKind(r.Kind) {
			return classControl
		}
	}
	return classHistory
}

// isFull reports whether err is SQLite's SQLITE_FULL (the disk is full).
func isFull(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL
}

// HistoryPaused reports whether history is paused by a full disk.
func (db *DB) HistoryPaused() bool { return db.paused.Load() }

// write runs fn in a write transaction of class c and commits it. When fn
// reports a change, subscribers are told after the commit. db.wmu
// serializes writes, so the connection's synchronous setting is the one c
// asks for.
func (db *DB) write(ctx context.Context, c class, fn func(tx *sql.Tx) (changed bool, err error)) error {
	db.wmu.Lock()
	defer db.wmu.Unlock()
	if c == classHistory && db.paused.Load() && !db.tryResume() {
		return ErrHistoryPaused
	}
	err := db.commit(ctx, c, fn)
	if err == nil || !isFull(err) {
		return err
	}
	db.pause()
	switch c {
	case classHistory:
		return fmt.Errorf("%w: %v", ErrHistoryPaused, err)
	case classUpkeep:
		return err
	}
	if !db.releaseReserve() {
		return err
	}
	// The reserve takes the WAL's pages into the database file, and the WAL
	// starts again from empty: the retry, and the control writes after it,
	// find room. (wal_autocheckpoint keeps the WAL well under the reserve.)
	db.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	db.quota.inexact()           // the failed try counted records it did not store
	return db.commit(ctx, c, fn) // fn sees the pause: Put skips history now
}

// commit runs fn in one transaction, fsynced at commit for control writes.
func (db *DB) commit(ctx context.Context, c class, fn func(tx *sql.Tx) (bool, error)) error {
	if c == classControl {
		if _, err := db.w.ExecContext(ctx, `PRAGMA synchronous = FULL`); err != nil {
			return err
		}
		defer db.w.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = NORMAL`)
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // a no-op after Commit
	changed, err := fn(tx)
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if changed {
		db.notify.broadcast(c != classReplica)
	}
	return nil
}

// pause stops history. db.wmu is held.
func (db *DB) pause() {
	if !db.paused.Swap(true) {
		db.lastCheck = time.Now()
	}
}

// releaseReserve deletes the reserve, giving its space to control records,
// and reports whether there was one. db.wmu is held.
func (db *DB) releaseReserve() bool {
	if db.opts.ReserveBytes == 0 {
		return false
	}
	err := os.Remove(db.reservePath())
	return err == nil
}

func (db *DB) reservePath() string { return db.path + ".reserve" }

// tryResume resumes history when the file system has room for twice the
// reserve and the reserve could be made again; it looks at most every
// ResumeEvery. db.wmu is held.
func (db *DB) tryResume() bool {
	now := time.Now()
	if now.Sub(db.lastCheck) < db.opts.ResumeEvery {
		return false
	}
	db.lastCheck = now
	want := db.opts.ReserveBytes
	if free, err := freeBytes(db.path); err == nil && free < uint64(2*max(want, 1<<20)) {
		return false
	}
	if err := makeReserve(db.reservePath(), want); err != nil {
		return false
	}
	db.paused.Store(false)
	db.skipFloor = nil         // the cursors stayed below what was skipped
	db.notify.broadcast(false) // followers fetch again what Put skipped
	return true
}

// makeReserve makes the file at path hold size bytes of disk space, or
// removes it and fails.
func makeReserve(path string, size int64) error {
	if size <= 0 {
		return nil
	}
	if info, err := os.Stat(path); err == nil && info.Size() >= size {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	err = allocate(f, size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("make the disk reserve %s: %w", path, err)
	}
	return nil
}

// writeZeros fills a reserve where the file system cannot allocate without
// writing.
func writeZeros(f *os.File, size int64) error {
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return err
		}
	}
	return nil
}

// ErrCorrupt means SQLite's integrity check found the file damaged.
var ErrCorrupt = errors.New("replica file is damaged")

// Check runs SQLite's integrity_check over the whole file: nil when it
// answers "ok", else ErrCorrupt with what it found.
func (db *DB) Check(ctx context.Context) error {
	found, err := integrityCheck(ctx, db.r)
	if isCorrupt(err) {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if err != nil {
		return fmt.Errorf("check replica: %w", err)
	}
	if len(found) == 1 && found[0] == "ok" {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrCorrupt, strings.Join(found[:min(len(found), 10)], "; "))
}

// integrityCheck returns the lines of PRAGMA integrity_check.
func integrityCheck(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		found = append(found, s)
	}
	return found, rows.Err()
}

// isCorrupt reports whether err is SQLite's SQLITE_CORRUPT or SQLITE_NOTADB.
func isCorrupt(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code() & 0xff
	return c == sqlite3.SQLITE_CORRUPT || c == sqlite3.SQLITE_NOTADB
}
