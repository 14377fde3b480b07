package store

import "time"

func t0() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }
