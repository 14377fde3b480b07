package store_test

import (
	"context"
	"testing"

	"github.com/labpool/labpool/sync/store"
)

// signalled reports whether ch holds a signal, consuming it.
func signalled(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestSubscribe(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	ch, cancel := db.Subscribe()
	other, cancelOther := db.Subscribe()
	defer cancelOther()
	rec := store.Record{Origin: "B", Seq: 4, Kind: "node", Time: t0}
	member := store.MemberRow{ID: "B", Version: 1}
	steps := []struct {
		name string
		do   func() error
		want bool
	}{
		{"append", func() error { _, err := db.Append(ctx, "A", "node", "", t0, nil); return err }, true},
		{"put new", func() error { return db.Put(ctx, []store.Record{rec}) }, true},
		{"put again", func() error { return db.Put(ctx, []store.Record{rec}) }, false},
		{"member new", func() error { _, err := db.PutMember(ctx, member); return err }, true},
		{"member same", func() error { _, err := db.PutMember(ctx, member); return err }, false},
		{"setting", func() error { return db.SetSetting(ctx, "k", "v") }, false},
		{"prune", func() error { _, err := db.Prune(ctx, "node", t0.Add(1)); return err }, false},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := signalled(ch); got != s.want {
			t.Errorf("%s: signalled = %v; want %v", s.name, got, s.want)
		}
	}
	// Signals coalesce and never block a writer.
	appendN(t, db, "A", "sample.1s", 1)
	appendN(t, db, "A", "sample.1s", 1)
	if !signalled(ch) || signalled(ch) {
		t.Errorf("two commits did not coalesce into one signal")
	}
	cancel()
	cancel()
	appendN(t, db, "A", "sample.1m", 1)
	if signalled(ch) {
		t.Errorf("signalled after cancel")
	}
	if !signalled(other) {
		t.Errorf("other subscriber missed the last commit")
	}
}
