package app

import "context"

// AlertWebhook returns the pool's webhook as this machine has it: its URL,
// a secret of the lab's chat, only where this device is an owner or admin
// of its pool (or in none); a member's or viewer's device hears only that
// one is set.
func (s *Service) AlertWebhook(ctx context.Context) (AlertWebhook, error) {
	wh, err := s.Reader.AlertWebhook(ctx)
	if err != nil || wh.URL == "" {
		return wh, err
	}
	ps, err := s.Pool(ctx)
	if err != nil {
		return AlertWebhook{}, err
	}
	if ps.PoolID != "" && ps.SelfRole != "owner" && ps.SelfRole != "admin" {
		wh.URL = ""
	}
	return wh, nil
}
