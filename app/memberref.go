package app

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/labpool/labpool/sync/store"
)

// RemovedMark follows the name of a person removed from the pool wherever
// it is shown: the jobs and GPU-hours of someone who left keep their name
// ("bob (removed)"), not a device ID.
const RemovedMark = " (removed)"

// A member is a person with devices. Wherever labpool names who did
// something (a job's owner, a report's row, an alert), it names the
// person: every device of alice is "alice". A person is marked RemovedMark
// once no device of theirs is left in the pool; a device of theirs removed
// while they stay in the pool is still named "alice" (what it did is
// alice's, and alice is here). Where the device matters, it follows in
// parentheses: "alice (alice-laptop)".

// memberLabel is how a person is named to people: their name, marked when
// they were removed; the short ID of their first device without a name.
func memberLabel(id, name string, removed bool) string {
	if name == "" {
		name = shortID(id)
	}
	if removed {
		name += RemovedMark
	}
	return name
}

// people indexes the member table by device and by person.
type people struct {
	byDevice map[string]store.MemberRow
	active   map[string]bool     // persons with a device in the pool
	devices  map[string][]string // a person's devices, removed ones included, in ID order
}

func indexPeople(ms []store.MemberRow) people {
	p := people{byDevice: make(map[string]store.MemberRow, len(ms)), active: map[string]bool{}, devices: map[string][]string{}}
	for _, m := range ms {
		p.byDevice[m.ID] = m
		id, _ := m.PersonOf()
		p.devices[id] = append(p.devices[id], m.ID)
		if !m.Removed {
			p.active[id] = true
		}
	}
	return p
}

// label names device id by its person ("" when the pool never admitted it).
func (p people) label(id string) string {
	m, ok := p.byDevice[id]
	if !ok {
		return ""
	}
	pid, name := m.PersonOf()
	return memberLabel(pid, name, !p.active[pid])
}

// deviceLabel names device id with its person, where the device matters:
// "alice (alice-laptop)", "bob (bob-laptop, removed)" once bob left; ""
// when the pool never admitted it.
func (p people) deviceLabel(id string) string {
	m, ok := p.byDevice[id]
	if !ok {
		return ""
	}
	pid, name := m.PersonOf()
	dev := cmp.Or(m.Name, shortID(id))
	if !p.active[pid] {
		return fmt.Sprintf("%s (%s, %s)", memberLabel(pid, name, false), dev, strings.Trim(RemovedMark, " ()"))
	}
	return fmt.Sprintf("%s (%s)", memberLabel(pid, name, false), dev)
}

// personOf is the person of device id, and false when the pool never
// admitted it.
func (p people) personOf(id string) (string, bool) {
	m, ok := p.byDevice[id]
	if !ok {
		return "", false
	}
	pid, _ := m.PersonOf()
	return pid, true
}

// memberNames names every device the pool has admitted by its person
// (device ID -> "alice"), those removed since too, a person who left
// marked RemovedMark: the membership log keeps a removed member's record,
// and their jobs, hours and reservations keep their name. A device the
// pool never admitted is not in it.
func memberNames(ctx context.Context, db *store.DB) (map[string]string, error) {
	refs, err := memberPersons(ctx, db)
	if err != nil {
		return nil, err
	}
	return labelsOf(refs), nil
}

// labelsOf is each device's person's label in refs.
func labelsOf(refs map[string]personRef) map[string]string {
	out := make(map[string]string, len(refs))
	for id, p := range refs {
		out[id] = p.Label
	}
	return out
}

// memberPersons maps every device the pool has admitted to its person's
// ID (the device ID of the person's first device) and label.
func memberPersons(ctx context.Context, db *store.DB) (map[string]personRef, error) {
	ms, err := db.Members(ctx)
	if err != nil {
		return nil, fmt.Errorf("read members: %w", err)
	}
	p := indexPeople(ms)
	out := make(map[string]personRef, len(ms))
	for _, m := range ms {
		id, _ := m.PersonOf()
		out[m.ID] = personRef{ID: id, Label: p.label(m.ID), DeviceLabel: p.deviceLabel(m.ID)}
	}
	return out, nil
}

// personRef is a device's person, their ID and label, and the device's
// label where it matters (deviceLabel).
type personRef struct{ ID, Label, DeviceLabel string }

// peopleNames is memberNames with names for the devices the pool does not
// list: this machine's own name and the names nodes give themselves in
// their records (a machine outside any pool, or one not replicated yet).
// A member's device is named by its person.
func (r *Reader) peopleNames(ctx context.Context, nodes []Node) (map[string]string, error) {
	names, err := memberNames(ctx, r.db)
	if err != nil {
		return nil, err
	}
	return r.withMachineNames(names, nodes), nil
}

// withMachineNames adds to names (of members, by device) this machine's
// own name and those nodes give themselves, for devices it lacks.
func (r *Reader) withMachineNames(names map[string]string, nodes []Node) map[string]string {
	names[r.self.ID] = cmp.Or(names[r.self.ID], r.self.Name, shortID(r.self.ID))
	for _, n := range nodes {
		if _, member := names[n.ID]; !member {
			names[n.ID] = n.Name
		}
	}
	return names
}

// ResolveMembers turns what a person typed for a folder's members into
// the IDs of the people it names, in order and without repeats: a person's
// name names them, and so does the name, full device ID or unique prefix
// of one (such as the short ID K7Q2-MX4P) of any device of theirs. A
// person's ID is the device ID of their first device; the folder's holder
// opens it to every device of a person listed, those added later too. A
// reference that names no current member, or several people, is refused
// with the candidates named: a folder shared to someone nobody can be
// would lock them out.
func ResolveMembers(members []store.MemberRow, refs []string) ([]string, error) {
	p := indexPeople(members)
	out := []string{}
	seen := map[string]bool{}
	for _, ref := range refs {
		ref = strings.TrimSpace(ref)
		if ref == "" {
			continue
		}
		ids, err := resolveRef(members, p, ref)
		if err != nil {
			return nil, err
		}
		pid, _ := p.personOf(ids[0])
		if !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	if len(refs) > 0 && len(out) == 0 {
		return nil, fmt.Errorf("%w: no member named: give names or device IDs, or no --members for every member", ErrInvalid)
	}
	return out, nil
}

// resolveDevice turns what a person typed for one device (a reservation's
// member) into its device ID: a device's name, ID or unique ID prefix, or
// the name of a person with one device in the pool. A person with several
// is refused naming their devices.
func resolveDevice(members []store.MemberRow, ref string) (string, error) {
	p := indexPeople(members)
	ids, err := resolveRef(members, p, strings.TrimSpace(ref))
	if err != nil {
		return "", err
	}
	if len(ids) > 1 {
		var names []string
		for _, id := range ids {
			names = append(names, fmt.Sprintf("%s (%s)", p.byDevice[id].Name, shortID(id)))
		}
		return "", fmt.Errorf("%w: %q has %d devices in the pool: name one of %s", ErrInvalid, ref, len(ids), strings.Join(names, ", "))
	}
	return ids[0], nil
}

// resolveRef finds the current devices ref names: one device (by ID, ID
// prefix or name), or every current device of the one person it names.
// Several people, or none, are refused naming the candidates.
func resolveRef(members []store.MemberRow, p people, ref string) ([]string, error) {
	// A match is a person, and the one device named when a device's name
	// or ID matched ("" when the person's name did).
	type match struct{ person, device string }
	var exact, byName, byPrefix []match
	add := func(l *[]match, pid, dev string) {
		for i, x := range *l {
			if x.person == pid {
				if dev == "" {
					(*l)[i].device = "" // the person, not one device of theirs
				}
				return
			}
		}
		*l = append(*l, match{pid, dev})
	}
	key := idKey(ref)
	for _, m := range members {
		if m.Removed {
			continue
		}
		pid, pname := m.PersonOf()
		switch {
		case idKey(m.ID) == key:
			return []string{m.ID}, nil
		case pname == ref:
			add(&exact, pid, "")
		case m.Name == ref:
			add(&exact, pid, m.ID)
		case strings.EqualFold(pname, ref):
			add(&byName, pid, "")
		case strings.EqualFold(m.Name, ref):
			add(&byName, pid, m.ID)
		case len(key) >= 4 && strings.HasPrefix(idKey(m.ID), key):
			add(&byPrefix, pid, m.ID)
		}
	}
	found := exact
	for _, more := range [][]match{byName, byPrefix} {
		if len(found) == 0 {
			found = more
		}
	}
	switch len(found) {
	case 1:
		if found[0].device != "" {
			return []string{found[0].device}, nil
		}
		var cur []string
		for _, id := range p.devices[found[0].person] {
			if !p.byDevice[id].Removed {
				cur = append(cur, id)
			}
		}
		return cur, nil
	case 0:
		return nil, fmt.Errorf("%w: no member %q in the pool (members: %s)", ErrNotFound, ref, candidates(members, nil))
	}
	var pids []string
	for _, f := range found {
		pids = append(pids, f.person)
	}
	return nil, fmt.Errorf("%w: %q is ambiguous: it could be %s; give more of the device ID", ErrInvalid, ref, candidates(members, pids))
}

// idKey is a device ID as compared: upper case, without its dashes.
func idKey(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", ""))
}

// candidates names the current devices of the people of only (every one
// when nil) for a person: "alice: dgx (K7Q2-MX4P)", or "dgx (K7Q2-MX4P)"
// for a device named as its person.
func candidates(members []store.MemberRow, only []string) string {
	var s []string
	for _, m := range members {
		pid, pname := m.PersonOf()
		if m.Removed || (only != nil && !slices.Contains(only, pid)) {
			continue
		}
		c := fmt.Sprintf("%s (%s)", m.Name, shortID(m.ID))
		if pname != "" && pname != m.Name {
			c = pname + ": " + c
		}
		s = append(s, c)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// MemberNames names the entries of a folder's member list for a person, in
// order: a person's ID by their name ("alice", marked RemovedMark once
// they left), the ID of a device listed alone (a list from before people)
// by its person and the device ("alice (alice-laptop)", deviceLabel), and an ID the
// pool does not list by its short ID.
func MemberNames(members []store.MemberRow, ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	p := indexPeople(members)
	byKey := make(map[string]string, len(members))
	for _, m := range members {
		byKey[idKey(m.ID)] = m.ID
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		dev, ok := byKey[idKey(id)]
		switch pid, _ := p.personOf(dev); {
		case !ok:
			out[i] = shortID(id)
		case pid == dev:
			out[i] = p.label(dev)
		default:
			out[i] = p.deviceLabel(dev)
		}
	}
	return out
}
