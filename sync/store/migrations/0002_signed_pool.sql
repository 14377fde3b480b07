-- Membership becomes a log of signed records (sync/pool): every change is
-- signed by an owner's or admin's device key and checked back to the pool's
-- creator by every member. The records are kept as received; the members
-- table is what they say, rewritten whenever the log changes.
CREATE TABLE pool_records (
	hash    TEXT    PRIMARY KEY, -- hex SHA-256 of the signed record
	version INTEGER NOT NULL,    -- the record's clock (Unix milliseconds)
	data    BLOB    NOT NULL     -- the record as signed and sent (JSON)
) WITHOUT ROWID;

-- The member's role, as the log says: owner, admin, member or viewer.
ALTER TABLE members ADD COLUMN role TEXT NOT NULL DEFAULT '';

-- Unsigned member rows and pools from before cannot be checked: they go.
DELETE FROM members;
DELETE FROM settings WHERE key IN ('pool.secret', 'pool.id');
