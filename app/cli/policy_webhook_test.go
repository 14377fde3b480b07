package cli

import (
	"errors"
	"testing"

	"github.com/labpool/labpool/app"
)

func TestWebhookFlags(t *testing.T) {
	var u app.PolicyUpdate
	if err := webhookFlags(true, "off", true, "allow", &u); err != nil || u.WebhookOff == nil || !*u.WebhookOff || u.WebhookPrivate == nil || !*u.WebhookPrivate {
		t.Errorf("--webhook off --webhook-private allow = %+v, %v", u, err)
	}
	u = app.PolicyUpdate{}
	if err := webhookFlags(true, "on", true, "refuse", &u); err != nil || *u.WebhookOff || *u.WebhookPrivate {
		t.Errorf("--webhook on --webhook-private refuse = %+v, %v", u, err)
	}
	u = app.PolicyUpdate{}
	if err := webhookFlags(false, "", false, "", &u); err != nil || !u.IsZero() {
		t.Errorf("no flag = %+v, %v", u, err)
	}
	var usage usageError
	if err := webhookFlags(false, "", true, "yes", &u); !errors.As(err, &usage) {
		t.Errorf("--webhook-private yes = %v, want a usage error", err)
	}
}
