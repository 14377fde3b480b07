-- Records of the replicated log: every origin (a device ID) is the only
-- writer of its own records. (origin, kind, key) names a record; a newer
-- version replaces it and takes a higher seq, so "since N" returns the newest
-- version of every record changed after N.
CREATE TABLE records (
	origin  TEXT    NOT NULL,
	kind    TEXT    NOT NULL,
	key     TEXT    NOT NULL,
	seq     INTEGER NOT NULL CHECK (seq > 0),
	time_ms INTEGER NOT NULL, -- Unix milliseconds, UTC
	data    BLOB    NOT NULL, -- opaque JSON payload
	PRIMARY KEY (origin, kind, key)
);

-- Since: WHERE origin = ? AND seq > ? ORDER BY seq.
CREATE INDEX records_origin_seq ON records (origin, seq);

-- Range, LatestByKind and Prune: WHERE origin = ? AND kind = ? AND time_ms ...
CREATE INDEX records_origin_kind_time ON records (origin, kind, time_ms);

-- The highest seq ever held per origin. Pruning never lowers it, so our own
-- seq never goes backwards and a follower's "since" never repeats.
CREATE TABLE cursors (
	origin TEXT    PRIMARY KEY,
	seq    INTEGER NOT NULL
) WITHOUT ROWID;

-- Local settings of this installation; never replicated.
CREATE TABLE settings (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;

-- The pool's member set, written by many and merged last-writer-wins on
-- (version, added_by); removed members stay as tombstones.
CREATE TABLE members (
	id       TEXT    PRIMARY KEY,
	name     TEXT    NOT NULL,
	version  INTEGER NOT NULL,
	removed  INTEGER NOT NULL DEFAULT 0,
	added_ms INTEGER NOT NULL, -- Unix milliseconds, UTC
	added_by TEXT    NOT NULL
) WITHOUT ROWID;
