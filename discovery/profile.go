package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// profileTimeout bounds the question to Windows about its network profiles.
const profileTimeout = 10 * time.Second

// netProfile is one network connection profile of Windows, as
// Get-NetConnectionProfile reports it.
type netProfile struct {
	Name            string          // the network's name ("Wi-Fi 3", a domain)
	InterfaceAlias  string          // the interface ("Wi-Fi")
	NetworkCategory json.RawMessage // 0 or "Public", 1 or "Private", 2 or "DomainAuthenticated"
}

// public reports whether p is marked Public: Windows' firewall then drops
// inbound UDP 5353, so no other machine hears this one's mDNS answers.
func (p netProfile) public() bool {
	c := strings.Trim(string(p.NetworkCategory), `" `)
	return c == "0" || strings.EqualFold(c, "Public")
}

// parseProfiles reads the JSON of
// "Get-NetConnectionProfile | Select-Object Name,InterfaceAlias,NetworkCategory | ConvertTo-Json":
// one object for one profile, an array for several, nothing for none.
func parseProfiles(out []byte) ([]netProfile, error) {
	s := strings.TrimSpace(string(out))
	if s == "" {
		return nil, nil
	}
	if !strings.HasPrefix(s, "[") {
		s = "[" + s + "]"
	}
	var ps []netProfile
	if err := json.Unmarshal([]byte(s), &ps); err != nil {
		return nil, fmt.Errorf("read network profiles: %w", err)
	}
	return ps, nil
}

// publicAdvice says what to change when a network in ps is Public, or ""
// when none is.
func publicAdvice(ps []netProfile) string {
	var names []string
	for _, p := range ps {
		if p.public() {
			names = append(names, fmt.Sprintf("%q (%s)", p.Name, p.InterfaceAlias))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("Windows marks the network %s Public, and its firewall then blocks mDNS: "+
		"set this network to Private in Settings → Network & internet → (the network) → Network profile type",
		strings.Join(names, ", "))
}

// NetworkAdvice says what to change on this machine for mDNS to reach the
// LAN (a Windows network marked Public), or "" when there is nothing to say
// or this OS cannot tell.
func NetworkAdvice(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, profileTimeout)
	defer cancel()
	return networkAdvice(ctx)
}
