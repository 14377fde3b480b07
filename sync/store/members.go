package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"
)

// MemberRow is one member of the pool as replicated: written by many
// devices and merged last-writer-wins on (Version, AddedBy). A removed
// member stays as a tombstone (Removed) so the removal wins over stale adds.
type MemberRow struct {
	ID      string    `json:"id"`                // device ID
	Name    string    `json:"name"`              // display name
	Version uint64    `json:"v"`                 // bumped by every change; at most math.MaxInt64
	Removed bool      `json:"removed,omitempty"` // a tombstone
	AddedAt time.Time `json:"added_at"`          // millisecond precision, UTC
	AddedBy string    `json:"added_by"`          // device ID of the writer of this version
	Role    string    `json:"role,omitempty"`    // owner, admin, member or viewer
	// Person is the ID of the person whose device it is (the device ID of
	// their first device); PersonName the person's name. A row written
	// without them (before people) is a person of its own: PersonOf.
	Person     string `json:"person,omitempty"`
	PersonName string `json:"person_name,omitempty"`
}

// PersonOf returns the ID and name of m's person: m itself, named after
// the device, for a row that names none.
func (m MemberRow) PersonOf() (id, name string) {
	if m.Person == "" {
		return m.ID, m.Name
	}
	return m.Person, m.PersonName
}

// Supersedes reports whether m replaces old in the merge: a higher Version,
// or the same Version and a greater AddedBy (compared bytewise). Rows that
// tie on both, which a correct writer never produces, are ordered by Removed
// (a tombstone wins), Name, AddedAt, Person and PersonName, so every
// replica keeps the same one.
func (m MemberRow) Supersedes(old MemberRow) bool {
	switch {
	case m.Version != old.Version:
		return m.Version > old.Version
	case m.AddedBy != old.AddedBy:
		return m.AddedBy > old.AddedBy
	case m.Removed != old.Removed:
		return m.Removed
	case m.Name != old.Name:
		return m.Name > old.Name
	case toMS(m.AddedAt) != toMS(old.AddedAt):
		return toMS(m.AddedAt) > toMS(old.AddedAt)
	case m.Person != old.Person:
		return m.Person > old.Person
	}
	return m.PersonName > old.PersonName
}

// upsertMember keeps the greater row in the order of MemberRow.Supersedes,
// which SQLite's row-value comparison follows.
const upsertMember = `INSERT INTO members (id, name, version, removed, added_ms, added_by, role, person, person_name)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (id) DO UPDATE SET
		name = excluded.name, version = excluded.version, removed = excluded.removed,
		added_ms = excluded.added_ms, added_by = excluded.added_by, role = excluded.role,
		person = excluded.person, person_name = excluded.person_name
	WHERE (excluded.version, excluded.added_by, excluded.removed, excluded.name, excluded.added_ms,
			excluded.person, excluded.person_name)
		> (members.version, members.added_by, members.removed, members.name, members.added_ms,
			members.person, members.person_name)`

// PutMember merges m into the member set and reports whether it changed
// anything: m is kept when it Supersedes the row held for its ID, or when
// there is none. AddedAt is stored to the millisecond.
func (db *DB) PutMember(ctx context.Context, m MemberRow) (bool, error) {
	if m.ID == "" || m.Version > math.MaxInt64 {
		return false, fmt.Errorf("put member %q: invalid id or version %d", m.ID, m.Version)
	}
	var changed bool
	err := db.write(ctx, classControl, func(tx *sql.Tx) (bool, error) {
		res, err := tx.ExecContext(ctx, upsertMember,
			m.ID, m.Name, int64(m.Version), m.Removed, toMS(m.AddedAt), m.AddedBy, m.Role, m.Person, m.PersonName)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		changed = n > 0
		return changed, err
	})
	if err != nil {
		return false, fmt.Errorf("put member %s: %w", m.ID, err)
	}
	if changed {
		db.membersChanged()
	}
	return changed, nil
}

// SubscribeMembers returns a channel that receives a value after every
// change this DB made to the member set (coalesced, as Subscribe's), and
// the func that stops it.
func (db *DB) SubscribeMembers() (<-chan struct{}, func()) { return db.membersNotify.subscribeAll() }

// membersChanged counts a change of the member set and wakes its subscribers.
func (db *DB) membersChanged() {
	db.members.Add(1)
	db.membersNotify.broadcast(true)
}

// MembersGeneration grows whenever this DB changes the member set
// (PutMember, SavePool, ClearPool), so a watcher re-reads Members only then.
// Changes made by another process opening the same file are not counted.
func (db *DB) MembersGeneration() uint64 { return db.members.Load() }

// Members returns every member row, tombstones included, sorted by ID.
func (db *DB) Members(ctx context.Context) ([]MemberRow, error) {
	const q = `SELECT id, name, version, removed, added_ms, added_by, role, person, person_name FROM members ORDER BY id`
	rows, err := db.r.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read members: %w", err)
	}
	defer rows.Close()
	var out []MemberRow
	for rows.Next() {
		var (
			m       MemberRow
			version int64
			ms      int64
		)
		if err := rows.Scan(&m.ID, &m.Name, &version, &m.Removed, &ms, &m.AddedBy, &m.Role, &m.Person, &m.PersonName); err != nil {
			return nil, fmt.Errorf("read members: %w", err)
		}
		m.Version, m.AddedAt = uint64(version), fromMS(ms)
		out = append(out, m)
	}
	return out, rows.Err()
}
