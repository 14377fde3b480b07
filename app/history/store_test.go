package history

import (
	"context"
	"testing"
	"time"
)

func TestTier(t *testing.T) {
	tests := []struct {
		window time.Duration
		want   string
	}{
		{time.Second, KindSample1s},
		{time.Hour, KindSample1s},
		{time.Hour + time.Second, KindSample1m},
		{7 * 24 * time.Hour, KindSample1m},
		{7*24*time.Hour + time.Second, KindSample15m},
		{MaxWindow, KindSample15m},
	}
	for _, tt := range tests {
		if got := Tier(tt.window); got != tt.want {
			t.Errorf("Tier(%v) = %s, want %s", tt.window, got, tt.want)
		}
	}
}

func TestStoreLatest(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	putSample(t, db, selfID, KindSample1s, testSample(t0.Add(-time.Second), 1, 0))
	putSample(t, db, selfID, KindSample1s, testSample(t0, 2, 0))
	putSample(t, db, alphaID, KindSample1m, testSample(t0, 3, 0)) // a mean is not the latest sample
	got, err := NewStore(db).Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[selfID].Host.CPUPercent != 2 {
		t.Errorf("Latest = %v, want the newest 1 s sample of self only", got)
	}
}
