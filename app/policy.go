package app

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// Policy is this machine's own say over its resources (see jobs.Policy).
type Policy = jobs.Policy

// PolicyUpdate changes the fields it sets and leaves the others.
type PolicyUpdate struct {
	Launch             *string  `json:"launch,omitempty"` // "members" | "admins" | "nobody"
	MaxGPUsPerMember   *int     `json:"max_gpus_per_member,omitempty"`
	DefaultMemoryBytes *int64   `json:"default_memory_bytes,omitempty"`
	MaxMemoryBytes     *int64   `json:"max_memory_bytes,omitempty"`
	LogMaxBytes        *int64   `json:"log_max_bytes,omitempty"`
	JobUser            *string  `json:"job_user,omitempty"`
	AllowRoot          *bool    `json:"allow_root,omitempty"`
	IdleReclaimSeconds *int     `json:"idle_reclaim_seconds,omitempty"` // 0 = off
	IdleBelowPercent   *float64 `json:"idle_below_percent,omitempty"`
	JobNetwork         *string  `json:"job_network,omitempty"` // "isolated" | "outside" | "host"
	WebhookOff         *bool    `json:"webhook_off,omitempty"`
	WebhookPrivate     *bool    `json:"webhook_private,omitempty"`
	// SlurmUsers sets the Unix account of each member it names (a name,
	// device ID or unique prefix, resolved to a device ID by SetPolicy);
	// "" removes the member's. SlurmNodes pins each Slurm node it names
	// to a machine (resolved likewise); "" unpins it.
	SlurmUsers map[string]string `json:"slurm_users,omitempty"`
	SlurmNodes map[string]string `json:"slurm_nodes,omitempty"`
	// Reserve* set the parts of the reservation policy (reserve.Policy):
	// who may reserve ("members" | "admins" | "nobody"), GPUs and seconds
	// per reservation, how far ahead, how long before a start others'
	// jobs are told, reservations to come per member (0: the default of
	// each).
	ReserveWho          *string `json:"reserve_who,omitempty"`
	ReserveMaxGPUs      *int    `json:"reserve_max_gpus,omitempty"`
	ReserveMaxSeconds   *int64  `json:"reserve_max_seconds,omitempty"`
	ReserveAheadSeconds *int64  `json:"reserve_ahead_seconds,omitempty"`
	ReserveWarnSeconds  *int64  `json:"reserve_warn_seconds,omitempty"`
	ReservePerMember    *int    `json:"reserve_per_member,omitempty"`
	// The lend policy (lend.Policy): mode "never" | "always" | "idle",
	// the owner's time away before guests run, what guests get after the
	// grace ("pause" | "stop"), the grace, and the lend hours ("" any time).
	Lend             *string `json:"lend,omitempty"`
	LendAfterSeconds *int    `json:"lend_after_seconds,omitempty"`
	Yield            *string `json:"yield,omitempty"`
	GraceSeconds     *int    `json:"grace_seconds,omitempty"`
	LendHours        *string `json:"lend_hours,omitempty"`
	// ReserveAtStart is what others' jobs on a reservation's GPUs get at
	// its start: "stop", or "requeue" (a job with a restart policy goes
	// back to the queue; the others are stopped).
	ReserveAtStart *string `json:"reserve_at_start,omitempty"`
}

// IsZero says whether u changes nothing.
func (u PolicyUpdate) IsZero() bool { return reflect.DeepEqual(u, PolicyUpdate{}) }

// mergeMap returns m with set's entries set, "" removing one.
func mergeMap(m, set map[string]string) map[string]string {
	if len(set) == 0 {
		return m
	}
	out := make(map[string]string, len(m)+len(set))
	for k, v := range m {
		out[k] = v
	}
	for k, v := range set {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// Apply returns p with u's fields set.
func (u PolicyUpdate) Apply(p Policy) Policy {
	if u.Launch != nil {
		p.Launch = *u.Launch
	}
	if u.MaxGPUsPerMember != nil {
		p.MaxGPUsPerMember = *u.MaxGPUsPerMember
	}
	if u.DefaultMemoryBytes != nil {
		p.DefaultMemoryBytes = *u.DefaultMemoryBytes
	}
	if u.MaxMemoryBytes != nil {
		p.MaxMemoryBytes = *u.MaxMemoryBytes
	}
	if u.LogMaxBytes != nil {
		p.LogMaxBytes = *u.LogMaxBytes
	}
	if u.JobUser != nil {
		p.JobUser = *u.JobUser
	}
	if u.AllowRoot != nil {
		p.AllowRoot = *u.AllowRoot
	}
	if u.IdleReclaimSeconds != nil {
		p.IdleReclaimSeconds = *u.IdleReclaimSeconds
	}
	if u.IdleBelowPercent != nil {
		p.IdleBelowPercent = *u.IdleBelowPercent
	}
	if u.JobNetwork != nil {
		p.JobNetwork = *u.JobNetwork
	}
	if u.WebhookOff != nil {
		p.WebhookOff = *u.WebhookOff
	}
	if u.WebhookPrivate != nil {
		p.WebhookPrivate = *u.WebhookPrivate
	}
	setIf(&p.Lend.Mode, u.Lend)
	setIf(&p.Lend.AfterSeconds, u.LendAfterSeconds)
	setIf(&p.Lend.Yield, u.Yield)
	setIf(&p.Lend.GraceSeconds, u.GraceSeconds)
	setIf(&p.Lend.Hours, u.LendHours)
	p.SlurmUsers = mergeMap(p.SlurmUsers, u.SlurmUsers)
	p.SlurmNodes = mergeMap(p.SlurmNodes, u.SlurmNodes)
	setIf(&p.Reserve.Who, u.ReserveWho)
	setIf(&p.Reserve.MaxGPUs, u.ReserveMaxGPUs)
	setIf(&p.Reserve.MaxSeconds, u.ReserveMaxSeconds)
	setIf(&p.Reserve.AheadSeconds, u.ReserveAheadSeconds)
	setIf(&p.Reserve.WarnSeconds, u.ReserveWarnSeconds)
	setIf(&p.Reserve.PerMember, u.ReservePerMember)
	setIf(&p.Reserve.AtStart, u.ReserveAtStart)
	return p
}

// setIf sets *dst to *v when v is set.
func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// PolicyManager reads and sets this machine's policy, persisting it in the
// local settings (implemented by the daemon).
type PolicyManager interface {
	Policy(ctx context.Context) (Policy, error)
	SetPolicy(ctx context.Context, u PolicyUpdate) (Policy, error)
}

// Policy returns this machine's policy.
func (s *Service) Policy(ctx context.Context) (Policy, error) {
	return s.policy.Policy(ctx)
}

// SetPolicy changes this machine's policy; a policy that makes no sense is
// refused, naming the field.
// Members named in SlurmUsers and machines in SlurmNodes are resolved to
// device IDs among the pool's members first.
func (s *Service) SetPolicy(ctx context.Context, u PolicyUpdate) (Policy, error) {
	if len(u.SlurmUsers) > 0 || len(u.SlurmNodes) > 0 {
		ms, err := s.db.Members(ctx)
		if err != nil {
			return Policy{}, fmt.Errorf("read the pool's members: %w", err)
		}
		if u.SlurmUsers, err = resolveKeys(ms, u.SlurmUsers); err != nil {
			return Policy{}, fmt.Errorf("slurm user: %w", err)
		}
		if u.SlurmNodes, err = resolveValues(ms, u.SlurmNodes); err != nil {
			return Policy{}, fmt.Errorf("slurm node: %w", err)
		}
	}
	return s.policy.SetPolicy(ctx, u)
}

// resolveKeys is m with each key, a member's reference, made its device
// ID; a person's name, the ID of each of their devices in the pool.
func resolveKeys(members []store.MemberRow, m map[string]string) (map[string]string, error) {
	p := indexPeople(members)
	out := make(map[string]string, len(m))
	for ref, v := range m {
		ids, err := resolveRef(members, p, strings.TrimSpace(ref))
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			out[id] = v
		}
	}
	return out, nil
}

// resolveValues is m with each value but "", a machine's reference,
// made its device ID.
func resolveValues(members []store.MemberRow, m map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(m))
	for k, ref := range m {
		if ref != "" {
			id, err := resolveDevice(members, ref)
			if err != nil {
				return nil, err
			}
			ref = id
		}
		out[k] = ref
	}
	return out, nil
}
