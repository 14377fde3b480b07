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
	local, cancelLocal := db.SubscribeLocal()
	defer cancelLocal()
	rec := store.Record{Origin: "B", Seq: 4, Kind: "node", Time: t0}
	member := store.MemberRow{ID: "B", Version: 1}
	steps := []struct {
		name      string
		do        func() error
		want      bool
		wantLocal bool // SubscribeLocal: our own changes only
	}{
		{"append", func() error { _, err := db.Append(ctx, "A", "node", "", t0, nil); return err }, true, true},
		{"append sample", func() error { _, err := db.Append(ctx, "A", "sample.1s", "", t0, nil); return err }, true, true},
		{"put new", func() error { return db.Put(ctx, []store.Record{rec}) }, true, false},
		{"put again", func() error { return db.Put(ctx, []store.Record{rec}) }, false, false},
		{"member new", func() error { _, err := db.PutMember(ctx, member); return err }, true, true},
		{"member same", func() error { _, err := db.PutMember(ctx, member); return err }, false, false},
		{"pool", func() error { return db.SavePool(ctx, nil, []store.MemberRow{member}) }, true, true},
		{"setting", func() error { return db.SetSetting(ctx, "k", "v") }, false, false},
		{"prune", func() error { _, err := db.Prune(ctx, "node", t0.Add(1)); return err }, false, false},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := signalled(ch); got != s.want {
			t.Errorf("%s: signalled = %v; want %v", s.name, got, s.want)
		}
		if got := signalled(local); got != s.wantLocal {
			t.Errorf("%s: SubscribeLocal signalled = %v; want %v", s.name, got, s.wantLocal)
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
