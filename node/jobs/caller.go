package jobs

import "fmt"

// Roles a caller holds in the pool (sync/pool's, as strings).
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
	RoleViewer = "viewer"
)

// Caller is who asks: the device proven by the transport and its role in
// the pool. The machine's own device (Config.Node) is its local user: it
// acts on every job here, launches whatever the policy says, and is the one
// to whom Policy.Launch "nobody" leaves the machine.
type Caller struct {
	ID   string // device ID proven by TLS, or this machine's own ID for local calls
	Role string // "owner" | "admin" | "member" | "viewer"; "" = not a member
}

// local says whether c is this machine's own user.
func (m *Manager) local(c Caller) bool { return c.ID != "" && c.ID == m.cfg.Node }

// ownsMachine says whether c speaks for this machine's images: its own
// user, or an owner of the pool (replacing a tag, names under a registry
// host).
func (m *Manager) ownsMachine(c Caller) bool { return m.local(c) || c.Role == RoleOwner }

// OwnsMachine says whether c speaks for this machine's images (node/containers
// asks it before a load or pull replaces a tag).
func (m *Manager) OwnsMachine(c Caller) bool { return m.ownsMachine(c) }

// MayLaunch refuses callers who launch nothing here: non-members, viewers,
// and those the machine's launch policy keeps out (node/containers asks it
// before an image load or pull).
func (m *Manager) MayLaunch(c Caller) error { return m.mayLaunch(c) }

// manages says whether c may act on anyone's job here.
func (m *Manager) manages(c Caller) bool {
	return m.local(c) || c.Role == RoleOwner || c.Role == RoleAdmin
}

// sees says whether c may read j's secrets (its Env values): its owner (a
// device of the person who launched it), or this machine's own user.
func (m *Manager) sees(c Caller, j Job) bool { return m.owns(c.ID, j) || m.local(c) }

// person returns the person whose device id is: id itself where the pool
// knows no person for it.
func (m *Manager) person(id string) string {
	if m.cfg.PersonOf != nil && id != "" {
		if p := m.cfg.PersonOf(id); p != "" {
			return p
		}
	}
	return id
}

// SamePerson says whether devices a and b are of one person (or are one
// device), as the pool knows them (Config.PersonOf).
func (m *Manager) SamePerson(a, b string) bool {
	return a != "" && (a == b || m.person(a) == m.person(b))
}

// owns says whether device id owns j: it launched j, or it is a device of
// the person whose device did.
func (m *Manager) owns(id string, j Job) bool {
	return id != "" && (j.Owner == id || (j.Owner != "" && m.person(j.Owner) == m.person(id)))
}

// forbid is a refusal by an authorization or policy rule (HTTP 403).
func forbid(rule, format string, a ...any) error {
	return &RefusedError{Rule: rule, Detail: fmt.Sprintf(format, a...), Forbidden: true}
}

// mayLaunch refuses callers who launch nothing: non-members and viewers
// (launches, image loads and pulls).
func (m *Manager) mayLaunch(c Caller) error {
	switch {
	case m.local(c):
		return nil
	case c.Role == RoleViewer:
		return forbid(RuleViewerLaunch, "this device is a viewer of the pool; an admin can make it a member")
	case c.Role != RoleOwner && c.Role != RoleAdmin && c.Role != RoleMember:
		return forbid("members only", "this device is not a member of the pool")
	}
	return m.launchPolicy(c)
}

// Authorize returns job id if c may act on it (stop, remove, logs, stats,
// tunnels): its owner, an admin or owner of the pool, or this machine's
// own user.
func (m *Manager) Authorize(c Caller, id string) (Job, error) {
	j, err := m.Get(id)
	if err != nil {
		return Job{}, err
	}
	if !m.owns(c.ID, j) && !m.manages(c) {
		return Job{}, forbid("only a job's owner, admins and owners act on it", "job %s belongs to %s", j.Name, j.Owner)
	}
	return j, nil
}

// View is j as c may see it: without Env values unless c owns it, and
// without its command line unless c also may act on it.
func (m *Manager) View(c Caller, j Job) Job {
	switch {
	case m.sees(c, j):
		return j
	case m.manages(c):
		j.Spec.Env = nil
		return j
	}
	return j.Public()
}

// Public is j without what must not leave this machine but to its owner
// (the values of its environment) and to who may act on it (its command
// line, where tokens often live): what every member reads.
func (j Job) Public() Job {
	j.Spec.Env, j.Spec.PrivateSalt = nil, ""
	if len(j.Spec.Cmd) > 0 {
		j.Spec.Cmd, j.CmdWithheld = nil, true
	}
	return j
}
