package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// AddDeviceTTL is how long a code that adds a device to a person lasts.
const AddDeviceTTL = time.Hour

// AddDevice makes an invite that adds one device to person who (a
// person's name or ID, or a device of theirs; "" for this device's person),
// for one join within ttl (0: AddDeviceTTL). The device joins with the
// person's role. A person adds their own devices; an admin or owner adds
// those of people they may manage.
func (m *Manager) AddDevice(ctx context.Context, who string, ttl time.Duration) (InviteState, Code, error) {
	if ttl <= 0 {
		ttl = AddDeviceTTL
	}
	return m.signInvite(ctx, ttl, func(l *Log, expires, now time.Time) (Record, Code, error) {
		person, err := m.personOf(l, who)
		if err != nil {
			return Record{}, Code{}, err
		}
		return l.NewDeviceInvite(m.key, person, 1, expires, now)
	})
}

// personOf resolves who to a person's ID: "" is this device's person.
func (m *Manager) personOf(l *Log, who string) (string, error) {
	if strings.TrimSpace(who) == "" {
		me, ok := l.Member(m.Self().String())
		if !ok || me.Removed {
			return "", ErrNotInPool
		}
		return me.Person, nil
	}
	devs, err := findTarget(l, who, false)
	if err != nil {
		return "", err
	}
	return devs[0].Person, nil
}

// Merge makes the person of who one with the person of into (each a
// person's name or ID, or a device of theirs): who's devices become
// into's, with into's name and role. Owners merge.
func (m *Manager) Merge(ctx context.Context, who, into string) error {
	return m.sign(ctx, func(l *Log, now time.Time) ([]Record, error) {
		from, err := findTarget(l, who, false)
		if err != nil {
			return nil, err
		}
		to, err := findTarget(l, into, false)
		if err != nil {
			return nil, err
		}
		r, err := l.NewMerge(m.key, from[0].ID, to[0].Person, now)
		return []Record{r}, err
	})
}

// PersonOf returns the person (ID) whose device id is, removed or not;
// "" when the pool does not know the device.
func (m *Manager) PersonOf(id string) string {
	ms, _ := m.Member(id)
	return ms.Person
}

// Member returns device id as the log knows it (removed or not, with its
// person's name), and false outside a pool or for a device it never
// admitted: one lookup, not a snapshot of the whole pool.
func (m *Manager) Member(id string) (MemberState, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.log == nil {
		return MemberState{}, false
	}
	return m.log.Member(id)
}

// Persons returns the people of the pool, each with their devices.
func (m *Manager) Persons() []Person {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.log == nil {
		return nil
	}
	return m.log.Persons()
}

// findTarget resolves who among the devices in the pool (or, with removed,
// those removed from it): a device's full ID names that device; a person's
// name or ID names all of that person's devices; else a device's name or
// a unique prefix of its ID names that device. A person of one device is
// named by the device's name too, as a pool of before people names it.
func findTarget(l *Log, who string, removed bool) ([]MemberState, error) {
	devs, _, err := findTargetOf(l, who, removed)
	return devs, err
}

// findTargetOf is findTarget, and whether who named a person.
func findTargetOf(l *Log, who string, removed bool) ([]MemberState, bool, error) {
	who = strings.TrimSpace(who)
	if ms, ok := l.Member(who); ok && ms.Removed == removed {
		return []MemberState{ms}, false, nil
	}
	var people []Person
	for _, p := range l.Persons() {
		if who != "" && strings.EqualFold(p.Name, who) {
			people = append(people, p)
		}
	}
	for _, p := range people {
		if ids := pick(p, removed); len(people) == 1 && len(ids) > 0 {
			return devicesIn(l, ids), true, nil
		}
	}
	if len(people) > 1 {
		return nil, false, fmt.Errorf("%q %w (%d people): give a device's name or ID", who, ErrAmbiguous, len(people))
	}
	ms, err := findDevice(l, who, removed)
	if err != nil {
		if len(people) == 1 && errors.Is(err, ErrNoMember) {
			if removed {
				return nil, false, fmt.Errorf("%w: %q has no device removed from the pool", ErrNoMember, who)
			}
			return nil, false, fmt.Errorf("%w: %q has no device in the pool", ErrNoMember, who)
		}
		return nil, false, err
	}
	return []MemberState{ms}, false, nil
}

// pick returns p's devices in the pool, or with removed its removed ones.
func pick(p Person, removed bool) []string {
	if removed {
		return p.Removed
	}
	return p.Devices
}

func devicesIn(l *Log, ids []string) []MemberState {
	out := make([]MemberState, 0, len(ids))
	for _, id := range ids {
		if ms, ok := l.Member(id); ok {
			out = append(out, ms)
		}
	}
	return out
}
