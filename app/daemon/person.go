package daemon

import (
	"cmp"

	"github.com/labpool/labpool/sync/pool"
)

// personOf is the person whose device id is in pm's pool (the device ID
// of their first device), "" for a device that is not in it (removed, or
// never admitted), as the membership log this machine checked says.
func personOf(pm *pool.Manager, id string) string {
	if ms, ok := pm.Member(id); ok && !ms.Removed {
		return ms.Person
	}
	return ""
}

// personName is the name of the person whose device id is in pm's pool,
// removed since or not (their jobs stay theirs); "" for a device the pool
// never admitted. The metrics' person label: a name, unmarked, so that a
// person's series keep one label value.
func personName(pm *pool.Manager, id string) string {
	ms, _ := pm.Member(id)
	return cmp.Or(ms.PersonName, ms.Name)
}

// isPerson reports whether id is a person of pm's pool with a device in
// it: the device ID of their first device, which may have left the pool.
func isPerson(pm *pool.Manager, id string) bool {
	st, _ := pm.Snapshot()
	for _, m := range st.Members {
		if m.Person == id && !m.Removed {
			return true
		}
	}
	return false
}
