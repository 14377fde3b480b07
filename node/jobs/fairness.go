package jobs

import (
	"math"
	"time"
)

// UsageHalfLife is how fast a member's past GPU use fades from the queue's
// order: GPU-hours used a week ago weigh half as much as those used now,
// two weeks ago a quarter.
const UsageHalfLife = 7 * 24 * time.Hour

// DecayedUsage is each owner's GPU-hours in js, across every machine of the
// pool whose records js holds, each job's weighed by 2^(-age/halfLife), its
// age being how long ago it ended (0 while it runs). Records with no owner
// (an owner proof that does not verify: the reader left Owner empty) count
// for nobody. The caller passes one record per job and machine. person
// (nil: each device its own) keys the sums by the person whose device
// launched each job: a person's devices share one turn.
func DecayedUsage(js []Job, now time.Time, halfLife time.Duration, person func(string) string) map[string]float64 {
	out := map[string]float64{}
	for _, j := range js {
		if j.Owner == "" || j.GPUSeconds <= 0 || math.IsNaN(j.GPUSeconds) || math.IsInf(j.GPUSeconds, 0) {
			continue
		}
		age := time.Duration(0)
		if j.Finished != nil && j.Finished.Before(now) {
			age = now.Sub(*j.Finished)
		}
		owner := j.Owner
		if person != nil {
			owner = person(owner)
		}
		out[owner] += j.GPUSeconds / 3600 * math.Exp2(-age.Hours()/halfLife.Hours())
	}
	return out
}
