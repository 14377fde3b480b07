package daemon

import "github.com/labpool/labpool/sync/pool"

// personOf is the person whose device id is in pm's pool (the device ID
// of their first device), "" for a device that is not in it (removed, or
// never admitted), as the membership log this machine checked says.
func personOf(pm *pool.Manager, id string) string {
	st, ok := pm.Snapshot()
	if !ok {
		return ""
	}
	for _, m := range st.Members {
		if m.ID == id && !m.Removed {
			return m.Person
		}
	}
	return ""
}
