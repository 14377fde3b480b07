package beat

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestNext(t *testing.T) {
	base := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	tests := []struct {
		now  time.Duration // after base
		d    time.Duration
		want time.Duration
	}{
		{0, time.Second, time.Second},
		{1, time.Second, time.Second - 1},
		{300 * time.Millisecond, time.Second, 700 * time.Millisecond},
		{1300 * time.Millisecond, 500 * time.Millisecond, 200 * time.Millisecond},
		{1300 * time.Millisecond, 2 * time.Second, 700 * time.Millisecond},
		{59*time.Second + 999*time.Millisecond, time.Minute, time.Millisecond},
	}
	for _, tt := range tests {
		if got := Next(base.Add(tt.now), tt.d); got != tt.want {
			t.Errorf("Next(base+%v, %v) = %v, want %v", tt.now, tt.d, got, tt.want)
		}
	}
}

// TestTicksOnTheWallClock: two tickers made at different times tick at the
// same instants, the whole seconds.
func TestTicksOnTheWallClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(Next(time.Now(), time.Second) + 123*time.Millisecond)
		a := NewTicker(time.Second)
		defer a.Stop()
		time.Sleep(456 * time.Millisecond)
		b := NewTicker(time.Second)
		defer b.Stop()
		for range 3 {
			ta, tb := <-a.C, <-b.C
			if !ta.Equal(tb) || ta.Truncate(time.Second) != ta {
				t.Fatalf("ticks at %v and %v, want both on the same whole second", ta, tb)
			}
		}
	})
}

// TestStop: no tick after Stop; a slow receiver loses ticks, never blocks
// the ticker.
func TestStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := NewTicker(time.Second)
		time.Sleep(5500 * time.Millisecond) // five ticks, one kept
		if n := len(tk.C); n != 1 {
			t.Fatalf("%d ticks waiting, want 1 (the rest dropped)", n)
		}
		<-tk.C
		tk.Stop()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if n := len(tk.C); n != 0 {
			t.Errorf("%d ticks after Stop", n)
		}
	})
}
