package app

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/labpool/labpool/internal/beat"
)

// alertEventsEvery is the most often EventAlerts is sent.
const alertEventsEvery = time.Second

// RunAlertEvents sends EventAlerts (the alerts of the last week and every
// active one) whenever they change in the replica, at most once a second
// and only while a UI is subscribed, until ctx is cancelled.
func (s *Service) RunAlertEvents(ctx context.Context) error {
	changed, cancel := s.db.Subscribe()
	defer cancel()
	t := beat.NewTicker(alertEventsEvery)
	defer t.Stop()
	var last []byte
	dirty := true
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			dirty = true
			continue
		case <-t.C:
		}
		if !dirty {
			continue
		}
		if s.hub.Subscribers() == 0 {
			last = nil // a UI that subscribes gets the list at once
			continue
		}
		dirty = false
		as, err := s.Alerts(ctx, 0)
		if err != nil {
			continue
		}
		if b, _ := json.Marshal(as); !bytes.Equal(b, last) {
			last = b
			s.hub.Emit(EventAlerts, as)
		}
	}
}
