package cli

import (
	"fmt"

	"github.com/labpool/labpool/app"
)

// webhookFlags sets u's webhook fields from `labpool policy --webhook
// on|off --webhook-private allow|refuse`.
func webhookFlags(setPost bool, post string, setPrivate bool, private string, u *app.PolicyUpdate) error {
	if setPost {
		off, err := choice("--webhook", post, "off", "on")
		if err != nil {
			return err
		}
		u.WebhookOff = &off
	}
	if setPrivate {
		allow, err := choice("--webhook-private", private, "allow", "refuse")
		if err != nil {
			return err
		}
		u.WebhookPrivate = &allow
	}
	return nil
}

// choice is whether v is yes rather than no, refusing anything else.
func choice(flag, v, yes, no string) (bool, error) {
	switch v {
	case yes:
		return true, nil
	case no:
		return false, nil
	}
	return false, usageError{fmt.Errorf("%s %q: use %s or %s", flag, v, yes, no)}
}

// webhookText says what this machine does with the pool's webhook.
func webhookText(p app.Policy) string {
	switch {
	case p.WebhookOff:
		return "off (this machine posts no alert)"
	case p.WebhookPrivate:
		return "on, private addresses allowed"
	}
	return "on, public addresses only"
}
