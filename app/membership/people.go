package membership

import (
	"strings"

	"github.com/labpool/labpool/app"
)

// personName is the name a person is created or joins as: as given, or
// else the OS user's name of the daemon (app.OSUserName).
func personName(as string) string {
	if as = strings.TrimSpace(as); as != "" {
		return as
	}
	return app.OSUserName()
}
