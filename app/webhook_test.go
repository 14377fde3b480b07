package app

import (
	"context"
	"testing"
)

// TestAlertWebhookByRole: the webhook's URL, a secret of the lab's chat, is
// answered to an owner's or admin's device (and outside a pool); a member's
// or viewer's device hears only that one is set.
func TestAlertWebhookByRole(t *testing.T) {
	const hook = "https://chat.example.org/hooks/secret-token"
	tests := []struct {
		role    string
		wantURL string
	}{
		{"owner", hook},
		{"admin", hook},
		{"member", ""},
		{"viewer", ""},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			db := openDB(t)
			if err := db.SetSetting(context.Background(), SettingAlertWebhook, hook); err != nil {
				t.Fatal(err)
			}
			svc := newService(t, db, Self{ID: selfID}, nil, rolePool{role: tt.role})
			got, err := svc.AlertWebhook(context.Background())
			if err != nil || got.URL != tt.wantURL || !got.Set {
				t.Errorf("AlertWebhook as %s = %+v, %v; want URL %q, set", tt.role, got, err, tt.wantURL)
			}
		})
	}
	db := openDB(t)
	svc := newService(t, db, Self{ID: selfID}, nil, rolePool{role: "viewer"})
	if got, err := svc.AlertWebhook(context.Background()); err != nil || got.Set || got.URL != "" {
		t.Errorf("AlertWebhook with none set = %+v, %v", got, err)
	}
}
