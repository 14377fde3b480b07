package jobs

import (
	"errors"
	"fmt"
	"github.com/labpool/labpool/node/folders"
	"regexp"
	"slices"
	"strings"

	"github.com/labpool/labpool/node/lend"
	reservation "github.com/labpool/labpool/node/reserve" // queue.go has a func reserve
)

// Launch policies: who may launch jobs on this machine (its local user
// always may).
const (
	LaunchMembers = "members" // members, admins and owners of the pool
	LaunchAdmins  = "admins"  // admins and owners
	LaunchNobody  = "nobody"  // nobody but this machine's own user
)

// Policy is this machine's own say over its resources, kept in its local
// settings (never replicated) and set with `labpool policy`.
type Policy struct {
	Launch             string `json:"launch"`               // LaunchMembers, LaunchAdmins or LaunchNobody
	MaxGPUsPerMember   int    `json:"max_gpus_per_member"`  // GPUs one device may hold here, queued and running; 0 = no limit
	DefaultMemoryBytes int64  `json:"default_memory_bytes"` // a job's memory limit when it asks for none
	MaxMemoryBytes     int64  `json:"max_memory_bytes"`     // the most a job may ask for; 0 = no limit
	LogMaxBytes        int64  `json:"log_max_bytes"`        // a job's log is capped at this size
	JobUser            string `json:"job_user"`             // "uid:gid" jobs run as where the engine does not remap users
	AllowRoot          bool   `json:"allow_root"`           // root in a container even where it is the host's root
	// IdleReclaimSeconds stops a job whose GPUs all stayed under
	// IdleBelowPercent for that long, after a warning (see reclaim.go);
	// 0 = off.
	IdleReclaimSeconds int     `json:"idle_reclaim_seconds"`
	IdleBelowPercent   float64 `json:"idle_below_percent"`
	// JobNetwork is what a job's network reaches besides the tunnels to
	// it: "isolated" (nothing), "outside" (the LAN and the internet; ""
	// means it, the default) or "host" (also this host's other services).
	// No job reaches another job, nor this host's labpool ports, in any.
	JobNetwork string `json:"job_network,omitempty"`
	// WebhookOff: this machine posts no alert to the pool's webhook;
	// WebhookPrivate lets its posts reach private addresses (alerts.WebhookPolicy).
	WebhookOff     bool `json:"webhook_off"`
	WebhookPrivate bool `json:"webhook_private"`
	// SlurmUsers maps a member (device ID) to the Unix account their
	// Slurm jobs run as, on a cluster this machine stands for; a member
	// without one runs as the agent's job account (agent
	// --slurm-job-user).
	SlurmUsers map[string]string `json:"slurm_users,omitempty"`
	// SlurmNodes pins each compute node (Slurm's NodeName) to the device
	// ID of the labpool agent on it: only that device's samples of the
	// node are believed (idle reclaim, stats of a cluster job).
	SlurmNodes map[string]string `json:"slurm_nodes,omitempty"`
	// Reserve is who may reserve this machine's GPUs, and how much
	// (node/reserve); at a reservation's start the manager stops others'
	// jobs on its GPUs, after telling them (reserved.go).
	Reserve reservation.Policy `json:"reserve,omitzero"`
	// Lend is when this machine is lent to the pool's guests and how it is
	// taken back when its own user sits down (node/lend).
	Lend lend.Policy `json:"lend"`
}

// maxSlurmMap bounds SlurmUsers and SlurmNodes.
const maxSlurmMap = 4096

// slurmName is a Unix user or Slurm node name as the policy keeps it.
var slurmName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$`)

// checkSlurmMaps refuses a Slurm mapping that is too large or names
// something that cannot be a member, user, node or device.
func (p Policy) checkSlurmMaps() error {
	if len(p.SlurmUsers) > maxSlurmMap || len(p.SlurmNodes) > maxSlurmMap {
		return refuse("policy", "slurm users and nodes: at most %d of each", maxSlurmMap)
	}
	for member, user := range p.SlurmUsers {
		if !slurmName.MatchString(member) || !slurmName.MatchString(user) || user == "root" {
			return refuse("policy", "slurm user %s=%s: a member's device ID and a Unix user name other than root", member, user)
		}
	}
	for node, dev := range p.SlurmNodes {
		if !slurmName.MatchString(node) || !slurmName.MatchString(dev) {
			return refuse("policy", "slurm node %s=%s: a Slurm node name and a device ID", node, dev)
		}
	}
	return nil
}

// DefaultPolicy is the policy of a machine whose owner set none: members
// launch; 8 GiB or half the host's memory, whichever is less, per job
// unless it asks more, up to the host's memory; 64 MiB of logs; jobs run
// as nobody.
func DefaultPolicy() Policy {
	total := hostMemory()
	def := int64(8 << 30)
	if total > 0 {
		def = min(def, total/2)
	}
	return Policy{Launch: LaunchMembers, DefaultMemoryBytes: def, MaxMemoryBytes: total, LogMaxBytes: 64 << 20,
		JobUser: DefaultJobUser, IdleBelowPercent: 5, JobNetwork: NetOutside, Lend: lend.DefaultPolicy()}
}

var jobUser = regexp.MustCompile(`^[1-9][0-9]{0,9}:[1-9][0-9]{0,9}$`)

// Check refuses a policy that makes no sense, naming the field.
func (p Policy) Check() error {
	switch {
	case p.Launch != LaunchMembers && p.Launch != LaunchAdmins && p.Launch != LaunchNobody:
		return refuse("policy", "launch %q: use members, admins or nobody", p.Launch)
	case p.MaxGPUsPerMember < 0:
		return refuse("policy", "max-gpus-per-member %d: use 0 (no limit) or more", p.MaxGPUsPerMember)
	case p.DefaultMemoryBytes < 6<<20 || p.DefaultMemoryBytes > maxBytes:
		return refuse("policy", "default memory %d bytes: between 6 MiB and 1 PiB", p.DefaultMemoryBytes)
	case p.MaxMemoryBytes != 0 && p.MaxMemoryBytes < p.DefaultMemoryBytes:
		return refuse("policy", "max memory %d bytes is below the default, %d", p.MaxMemoryBytes, p.DefaultMemoryBytes)
	case p.LogMaxBytes < 1<<20:
		return refuse("policy", "log cap %d bytes: at least 1 MiB", p.LogMaxBytes)
	case !jobUser.MatchString(p.JobUser):
		return refuse("policy", "job user %q: a numeric uid:gid, neither 0", p.JobUser)
	case p.IdleReclaimSeconds != 0 && (p.IdleReclaimSeconds < minIdleReclaim || p.IdleReclaimSeconds > maxIdleReclaim):
		return refuse("policy", "idle reclaim after %ds: 0 (off), or between %ds and 30 days", p.IdleReclaimSeconds, minIdleReclaim)
	case p.IdleBelowPercent <= 0 || p.IdleBelowPercent > 100:
		return refuse("policy", "idle below %g%%: above 0 and at most 100", p.IdleBelowPercent)
	case p.JobNetwork != "" && !slices.Contains(NetworkModes, p.JobNetwork):
		return refuse("policy", "job network %q: use isolated, outside or host", p.JobNetwork)
	}
	if err := p.Reserve.Check(); err != nil {
		return refuse("policy", "%v", err)
	}
	if err := p.Lend.Check(); err != nil {
		var re *lend.RuleError
		if errors.As(err, &re) {
			return refuse(re.Rule, "%s", re.Detail)
		}
		return err
	}
	return p.checkSlurmMaps()
}

// Policy returns the machine's policy.
func (m *Manager) Policy() Policy {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.policy
}

// SetPolicy replaces the machine's policy (the caller persists it). It
// applies to launches from now on; running jobs keep their limits.
func (m *Manager) SetPolicy(p Policy) error {
	if err := p.Check(); err != nil {
		return err
	}
	m.mu.Lock()
	m.policy = p
	m.mu.Unlock()
	m.log.Info("machine policy set", "launch", p.Launch, "max_gpus_per_member", p.MaxGPUsPerMember,
		"default_memory", p.DefaultMemoryBytes, "max_memory", p.MaxMemoryBytes, "allow_root", p.AllowRoot, "job_network", p.JobNetwork)
	return nil
}

// launchPolicy refuses a member (or an admin) that the launch policy keeps
// out.
func (m *Manager) launchPolicy(c Caller) error {
	p := m.Policy()
	switch {
	case m.local(c):
	case p.Launch == LaunchNobody:
		return forbid("policy launch=nobody", "this machine takes no jobs from the pool; only its own user launches here")
	case p.Launch == LaunchAdmins && c.Role != RoleAdmin && c.Role != RoleOwner:
		return forbid("policy launch=admins", "only admins and owners launch on this machine")
	}
	return nil
}

// resourcePolicy fills in the memory limit and refuses what the policy
// does not allow c: more memory than its maximum, more GPUs than one
// device may hold here. Where the executor schedules (a cluster), memory
// is the cluster's to bound: a job without a limit gets its default.
func (m *Manager) resourcePolicy(c Caller, spec *Spec) error {
	p := m.Policy()
	schedules := m.schedules() // the cluster's own limits apply, not this host's memory
	if spec.MemoryBytes == 0 && !schedules {
		spec.MemoryBytes = p.DefaultMemoryBytes
	}
	if p.MaxMemoryBytes > 0 && spec.MemoryBytes > p.MaxMemoryBytes && !m.local(c) && !schedules {
		return forbid("policy max-memory", "%d MiB asked, this machine allows a job at most %d MiB", spec.MemoryBytes>>20, p.MaxMemoryBytes>>20)
	}
	if p.MaxGPUsPerMember == 0 || m.local(c) {
		return nil
	}
	want := Job{Spec: *spec}.request().want()
	held := m.gpusHeld(c.ID)
	if held+want > p.MaxGPUsPerMember {
		return forbid(fmt.Sprintf("policy max-gpus-per-member=%d", p.MaxGPUsPerMember),
			"%s holds %s here (queued and running) and asks for %d more", c.ID, gpuCount(held), want)
	}
	return nil
}

// gpusHeld is how many GPUs the queued, starting and running jobs here of
// owner's person (all their devices) hold or ask for.
func (m *Manager) gpusHeld(owner string) int {
	person := m.person(owner)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, j := range m.jobs {
		switch {
		case m.person(j.Owner) != person:
		case j.State == Queued:
			n += j.request().want()
		case j.State == Starting || j.State == Running:
			n += max(len(j.GPUs), j.request().want())
		}
	}
	return n
}

// runAs is the user j's container runs as, and whether root is allowed
// there. Where the engine remaps users or the policy allows root, the spec
// chooses (root or the image's user by default). Elsewhere a job runs as
// the owner of its read-write folders when that is not root, else as
// Policy.JobUser; root is refused. An executor that runs no Docker
// container runs jobs as its own user: nothing to choose (Validate refused
// a spec's user there).
func (m *Manager) runAs(spec Spec, binds []TaskMount, caps Capabilities) (user string, allowRoot bool, err error) {
	p := m.Policy()
	if !slices.Contains(caps.Images, "docker") {
		return "", false, nil
	}
	if caps.RemapsUsers || p.AllowRoot {
		return spec.User, p.AllowRoot, nil
	}
	user = p.JobUser
	owners := map[string]bool{}
	for _, b := range binds {
		if b.ReadOnly {
			continue
		}
		// The folder's user (folders.FolderUser, the rule copies into it
		// follow too); a root-owned folder's is the job user itself.
		if o, err := folders.FolderUser(b.HostPath, p.JobUser); err == nil {
			if u := fmt.Sprintf("%d:%d", o.UID, o.GID); u != p.JobUser {
				user = u
				owners[u] = true
			}
		}
	}
	if len(owners) > 1 {
		return "", false, refuse("rw-folders-one-owner", "the read-write folders belong to different users here; a job runs as one")
	}
	switch {
	case spec.User == "" || spec.User == user:
		return user, false, nil
	case isRoot(spec.User):
		return "", false, forbid("policy allow-root=false", "root in a container would be root on this machine (its Docker engine does not remap users); jobs run as %s here", user)
	}
	return "", false, refuse("job-user", "jobs run as %s on this machine (a read-write folder's owner, or the policy's job user); leave the user out", user)
}

func isRoot(u string) bool {
	name, group, _ := strings.Cut(u, ":")
	return name == "root" || name == "0" || group == "0"
}
