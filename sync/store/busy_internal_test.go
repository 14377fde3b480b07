package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// TestIsBusy wants SQLITE_BUSY known by its code, wrapped or not, and no
// other error taken for it by its text.
func TestIsBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	hold, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	ctx := context.Background()
	conn, err := hold.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "CREATE TABLE t (x); BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", path) // no busy timeout: answers at once
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, busy := other.ExecContext(ctx, "INSERT INTO t VALUES (1)")
	if busy == nil {
		t.Fatal("a write under another's exclusive lock succeeded")
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"busy", busy, true},
		{"wrapped", fmt.Errorf("apply migration 0001: %w", busy), true},
		{"text only", errors.New("SQLITE_BUSY (5): database is locked"), false},
		{"other", sql.ErrNoRows, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := isBusy(tt.err); got != tt.want {
			t.Errorf("isBusy(%s: %v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
