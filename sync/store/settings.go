package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Setting returns the local setting key, and false when it is not set.
// Settings belong to this installation and are never replicated.
func (db *DB) Setting(ctx context.Context, key string) (string, bool, error) {
	var v string
	err := db.r.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read setting %q: %w", key, err)
	}
	return v, true, nil
}

// SetSetting sets the local setting key to value.
func (db *DB) SetSetting(ctx context.Context, key, value string) error {
	const q = `INSERT INTO settings (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`
	err := db.write(ctx, classControl, func(tx *sql.Tx) (bool, error) {
		_, err := tx.ExecContext(ctx, q, key, value)
		return false, err
	})
	if err != nil {
		return fmt.Errorf("write setting %q: %w", key, err)
	}
	return nil
}
