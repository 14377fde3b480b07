// Package store is the local SQLite replica (modernc.org/sqlite, WAL): a
// replicated log of records in which every origin (a device ID) is the only
// writer of its own records, the pool's member set, and local settings.
//
// A record is named by (origin, kind, key). Its origin numbers every change
// with a sequence that only grows; writing a record again replaces it and
// gives it a new seq, so Since(origin, n) returns the newest version of every
// record that changed after n, like Syncthing's sequence index. Append writes
// our own records and assigns their seqs; Put stores records replicated from
// another origin, idempotently and in any order.
//
// Times are stored as Unix milliseconds and come back in UTC, truncated to the
// millisecond.
//
// A DB is safe for concurrent use. Writes go through one connection, so they
// never wait on each other inside a process; reads use a pool of read-only
// connections and run beside writes (WAL). Several processes may open the
// same file: their writes wait for each other up to a busy timeout.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// busyTimeoutMS is how long a statement waits for another connection's lock,
// in milliseconds, before failing with SQLITE_BUSY.
const busyTimeoutMS = 10_000

// maxReaders bounds the read-only connections open at once.
const maxReaders = 8

// readerIdle is how long a read-only connection may sit unused before it
// is closed.
const readerIdle = 30 * time.Second

// DB is an open replica.
type DB struct {
	w *sql.DB // one connection; every write transaction is BEGIN IMMEDIATE
	r *sql.DB // read-only connections

	notify        notifier
	membersNotify notifier // wakes SubscribeMembers

	path      string  // absolute path of the database file
	opts      Options // with defaults filled in
	wmu       sync.Mutex
	paused    atomic.Bool       // history paused by a full disk (see durable.go)
	lastCheck time.Time         // of free space while paused; guarded by wmu
	skipFloor map[string]uint64 // per origin, the lowest seq Put skipped while paused; guarded by wmu
	quota     quota             // what is held per origin, for Receive and Append; guarded by wmu
	members   atomic.Uint64
	appended  sync.Map  // origin -> uint64: the highest seq Append gave it in this process
	since     *sql.Stmt // Since's query, prepared once
	wstmts    writeStmts

	closeOnce sync.Once
	closeErr  error
}

// Open opens or creates the replica at path (a file; not ":memory:") and
// brings its schema up to date. It fails with ErrSchemaTooNew when the file
// was written by a newer labpool. The file and its -wal and -shm files are
// the owner's alone (0600), also when an older labpool made them 0644.
func Open(path string) (*DB, error) { return OpenWith(path, Options{}) }

// OpenWith is Open with options. It holds opts.ReserveBytes of disk space
// back for control records (see durable.go); on a disk too full for that, it
// opens with history paused.
func OpenWith(path string, opts Options) (*DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open replica %s: %w", path, err)
	}
	if err := ownerOnly(abs); err != nil {
		return nil, fmt.Errorf("open replica %s: %w", path, err)
	}
	w, err := sql.Open("sqlite", dsn(abs, "_txlock=immediate&_journal_mode=WAL"))
	if err != nil {
		return nil, fmt.Errorf("open replica %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	if err := migrate(context.Background(), w); err != nil {
		w.Close()
		return nil, fmt.Errorf("open replica %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", dsn(abs, "_query_only=1"))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open replica %s: %w", path, err)
	}
	r.SetMaxOpenConns(maxReaders)
	r.SetMaxIdleConns(maxReaders)
	// A reader left idle gives its page cache back: an agent at rest keeps
	// the one or two its streams use.
	r.SetConnMaxIdleTime(readerIdle)
	db := &DB{w: w, r: r, path: abs, opts: opts.withDefaults()}
	db.quota.limit, db.quota.control = db.opts.OriginQuota, db.opts.ControlQuota
	if err := db.prepare(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open replica %s: %w", path, err)
	}
	if err := makeReserve(db.reservePath(), db.opts.ReserveBytes); err != nil {
		db.pause()
	}
	return db, nil
}

// ownerOnly creates the replica file 0600 when it is missing (SQLite gives
// its -wal and -shm files the database's mode) and takes group and other
// permissions away from an existing one and its -wal and -shm files.
func ownerOnly(abs string) error {
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	for _, p := range []string{abs, abs + "-wal", abs + "-shm"} {
		info, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && !info.Mode().IsRegular()) {
			continue
		} else if err != nil {
			return err
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			if err := os.Chmod(p, perm&^0o077); err != nil {
				return err
			}
		}
	}
	return nil
}

// dsn returns the SQLite URI of the file at the absolute path abs, with the
// pragmas every connection needs plus extra (already query-encoded).
func dsn(abs, extra string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	q := fmt.Sprintf("_busy_timeout=%d&_foreign_keys=1&_synchronous=NORMAL&_pragma=wal_autocheckpoint(%d)", busyTimeoutMS, walPages)
	if extra != "" {
		q += "&" + extra
	}
	return u.String() + "?" + q
}

// Close closes the replica. It is safe to call more than once.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.closeErr = errors.Join(db.closeStmts(), db.r.Close(), db.w.Close())
	})
	return db.closeErr
}

// writeStmts are the statements every Append and Put runs, prepared once
// on the write connection (a transaction uses them through Tx.StmtContext,
// which does not prepare them again).
type writeStmts struct {
	nextSeq, replace, upsert, advance *sql.Stmt
}

// prepare prepares the statements of the hot paths.
func (db *DB) prepare() error {
	var err error
	prep := func(c *sql.DB, q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var s *sql.Stmt
		s, err = c.Prepare(q)
		return s
	}
	db.since = prep(db.r, sinceQuery)
	db.wstmts = writeStmts{
		nextSeq: prep(db.w, nextSeq),
		replace: prep(db.w, replaceRecord),
		upsert:  prep(db.w, upsertRecord),
		advance: prep(db.w, advanceCursor),
	}
	return err
}

func (db *DB) closeStmts() error {
	var errs []error
	for _, s := range []*sql.Stmt{db.since, db.wstmts.nextSeq, db.wstmts.replace, db.wstmts.upsert, db.wstmts.advance} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}
