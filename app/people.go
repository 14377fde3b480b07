package app

import (
	"slices"
	"strings"
)

// PeopleOf groups members into the people they are devices of (by
// PersonID; a member of none is a person of its own, named after it), with
// the role of a device in the pool, sorted by name. A person with no device
// in the pool is inactive and keeps the role it last had.
func PeopleOf(members []Member) []Person {
	byID := map[string]*Person{}
	var order []*Person
	for _, m := range members {
		id, name := m.PersonID, m.PersonName
		if id == "" {
			id, name = m.ID, m.Name
		}
		p, ok := byID[id]
		if !ok {
			p = &Person{ID: id, Name: name, Role: m.Role, Devices: []PersonDevice{}, Removed: []PersonDevice{}}
			byID[id] = p
			order = append(order, p)
		}
		d := PersonDevice{ID: m.ID, Name: m.Name, Online: m.Online, Self: m.Self}
		if m.Removed {
			p.Removed = append(p.Removed, d)
		} else {
			p.Devices = append(p.Devices, d)
			p.Role, p.Active = m.Role, true
		}
		p.Self = p.Self || m.Self
	}
	out := make([]Person, 0, len(order))
	for _, p := range order {
		byDevice := func(a, b PersonDevice) int { return strings.Compare(a.ID, b.ID) }
		slices.SortFunc(p.Devices, byDevice)
		slices.SortFunc(p.Removed, byDevice)
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Person) int {
		if c := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}
