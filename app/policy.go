package app

import (
	"context"

	"github.com/labpool/labpool/node/jobs"
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
	return p
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
func (s *Service) SetPolicy(ctx context.Context, u PolicyUpdate) (Policy, error) {
	return s.policy.SetPolicy(ctx, u)
}
