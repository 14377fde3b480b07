package app

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/labpool/labpool/sync/store"
)

// RemovedMark follows the name of a member removed from the pool wherever
// it is shown: the jobs and GPU-hours of someone who left keep their name
// ("bob (removed)"), not a device ID.
const RemovedMark = " (removed)"

// memberLabel is how a member is named to people: its name, marked when
// it was removed; the short ID of a member without a name.
func memberLabel(id, name string, removed bool) string {
	if name == "" {
		name = shortID(id)
	}
	if removed {
		name += RemovedMark
	}
	return name
}

// memberNames names every device the pool has admitted (device ID ->
// name), those removed since too, their names marked RemovedMark: the
// membership log keeps a removed member's record, and their jobs, hours
// and reservations keep their name. A device the pool never admitted is
// not in it.
func memberNames(ctx context.Context, db *store.DB) (map[string]string, error) {
	ms, err := db.Members(ctx)
	if err != nil {
		return nil, fmt.Errorf("read members: %w", err)
	}
	out := make(map[string]string, len(ms))
	for _, m := range ms {
		out[m.ID] = memberLabel(m.ID, m.Name, m.Removed)
	}
	return out, nil
}

// peopleNames is memberNames with this machine's own name and the names
// nodes give themselves in their records over their member names (as the
// pool's views show machines).
func (r *Reader) peopleNames(ctx context.Context, nodes []Node) (map[string]string, error) {
	names, err := memberNames(ctx, r.db)
	if err != nil {
		return nil, err
	}
	names[r.self.ID] = cmp.Or(r.self.Name, names[r.self.ID], shortID(r.self.ID))
	for _, n := range nodes {
		names[n.ID] = n.Name
	}
	return names, nil
}

// ResolveMembers turns what a person typed for a folder's members (a
// member's name, a full device ID, or a unique prefix of one such as the
// short ID K7Q2-MX4P) into full device IDs, in order and without
// repeats. A reference that names no current member, or several, is
// refused with the candidates named: a folder shared to a member nobody
// can be would lock that member out.
func ResolveMembers(members []Member, refs []string) ([]string, error) {
	out := []string{}
	seen := map[string]bool{}
	for _, ref := range refs {
		ref = strings.TrimSpace(ref)
		if ref == "" {
			continue
		}
		m, err := resolveMember(members, ref)
		if err != nil {
			return nil, err
		}
		if !seen[m.ID] {
			seen[m.ID] = true
			out = append(out, m.ID)
		}
	}
	if len(refs) > 0 && len(out) == 0 {
		return nil, fmt.Errorf("%w: no member named: give names or device IDs, or no --members for every member", ErrInvalid)
	}
	return out, nil
}

func resolveMember(members []Member, ref string) (Member, error) {
	var exact, byName, byPrefix []Member
	key := idKey(ref)
	for _, m := range members {
		if m.Removed {
			continue
		}
		switch {
		case idKey(m.ID) == key:
			return m, nil
		case m.Name == ref:
			exact = append(exact, m)
		case strings.EqualFold(m.Name, ref):
			byName = append(byName, m)
		case len(key) >= 4 && strings.HasPrefix(idKey(m.ID), key):
			byPrefix = append(byPrefix, m)
		}
	}
	match := exact
	for _, more := range [][]Member{byName, byPrefix} {
		if len(match) == 0 {
			match = more
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return Member{}, fmt.Errorf("%w: no member %q in the pool (members: %s)", ErrNotFound, ref, candidates(members))
	}
	return Member{}, fmt.Errorf("%w: %q is ambiguous: it could be %s; give more of the device ID", ErrInvalid, ref, candidates(match))
}

// idKey is a device ID as compared: upper case, without its dashes.
func idKey(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", ""))
}

// candidates names members for a person: "name (short ID)".
func candidates(members []Member) string {
	var s []string
	for _, m := range members {
		if !m.Removed {
			s = append(s, fmt.Sprintf("%s (%s)", m.Name, shortID(m.ID)))
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// MemberNames names the devices ids for a person, in order: a member's
// name (marked RemovedMark once removed), or the short ID of a device
// the pool does not list.
func MemberNames(members []Member, ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	names := make(map[string]string, len(members))
	for _, m := range members {
		names[idKey(m.ID)] = memberLabel(m.ID, m.Name, m.Removed)
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		if n := names[idKey(id)]; n != "" {
			out[i] = n
		} else {
			out[i] = shortID(id)
		}
	}
	return out
}
