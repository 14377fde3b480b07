package app

import "context"

// AlertWebhook returns the pool's webhook as this machine has it: its URL,
// a secret of the lab's chat, only where this device is an owner or admin
// of its pool (or in none); a member's or viewer's machine holds none and
// hears only that one is set.
func (s *Service) AlertWebhook(ctx context.Context) (AlertWebhook, error) {
	wh, err := s.Reader.AlertWebhook(ctx)
	if err != nil {
		return wh, err
	}
	ps, err := s.Pool(ctx)
	if err != nil {
		return AlertWebhook{}, err
	}
	holds := webhookHolders(ps)
	if !holds(s.self.ID) {
		// It holds none (or one it is about to drop): one is set when
		// an owner's or admin's machine publishes that it holds one.
		wh = AlertWebhook{Set: wh.Set || s.heldByHolder(ctx, ps, holds)}
	}
	return wh, nil
}

// HoldsWebhook says whether a machine whose device has role in its pool
// (inPool false: it is in none) holds the pool's webhook URL: only owners'
// and admins' machines do; an owner's or admin's machine relays the
// alerts of the others (app/alerting).
func HoldsWebhook(role string, inPool bool) bool {
	return !inPool || role == "owner" || role == "admin"
}

// webhookHolders says which machines hold the webhook URL (HoldsWebhook).
func webhookHolders(ps PoolStatus) func(id string) bool {
	if ps.PoolID == "" {
		return func(string) bool { return true }
	}
	roles := map[string]string{ps.SelfID: ps.SelfRole}
	for _, m := range ps.Members {
		if !m.Removed {
			roles[m.ID] = m.Role
		}
	}
	return func(id string) bool { return HoldsWebhook(roles[id], true) }
}

// heldByHolder says whether a machine that may hold the webhook URL
// publishes that it does.
func (s *Service) heldByHolder(ctx context.Context, ps PoolStatus, holds func(string) bool) bool {
	for _, m := range ps.Members {
		if m.Removed || !holds(m.ID) {
			continue
		}
		if st, err := s.alertState(ctx, m.ID); err == nil && st.Webhook {
			return true
		}
	}
	return false
}
