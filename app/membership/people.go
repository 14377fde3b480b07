package membership

import (
	"strings"

	"github.com/labpool/labpool/app"
)

// personName is the name of the person of device id (a person's ID is
// their first device's), "" when it is none in the pool.
func (p *Membership) personName(id string) string {
	ms, _ := p.pm.Member(id)
	return ms.PersonName
}

// asName is the name a person is created or joins as: as given, or
// else the OS user's name of the daemon (app.OSUserName).
func asName(as string) string {
	if as = strings.TrimSpace(as); as != "" {
		return as
	}
	return app.OSUserName()
}
