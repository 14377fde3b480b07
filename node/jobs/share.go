package jobs

import (
	"regexp"
)

// migProfileName is a MIG profile as NVIDIA names them: "1g.10gb",
// "3g.40gb", "1g.12gb+me", "1c.3g.40gb".
var migProfileName = regexp.MustCompile(`^([1-9]c\.)?[1-9]g\.[0-9]{1,4}gb(\+[a-z]{1,8})?$`)

// validateShare checks what a spec asks of a GPU beside whole GPUs: a
// share of one GPU (in (0, 1], 1 being the whole GPU; its memory cap no
// more than a GPU has), or a count of MIG instances of one profile. Shares
// of one GPU add up to at most one: the ledger sees to that (alloc.Fit).
func validateShare(s Spec) error {
	share := s.GPUShare
	switch {
	case !(share >= 0 && share <= 1): // NaN fails too
		return refuse("gpu-share", "a GPU share of %v is out of range: a share is more than 0 and at most 1 (one whole GPU)", share)
	case share > 0 && share < 1 && (s.GPUs > 1 || len(s.GPUIDs) > 0 || len(s.MIGIDs) > 0 || s.MIGProfile != ""):
		return refuse("gpu-share", "a GPU share is a share of one GPU: ask for it alone, not with GPU indexes, MIG instances or several GPUs")
	case s.GPUMemBytes > 0 && !(share > 0 && share < 1):
		return refuse("gpu-mem", "a GPU memory cap goes with a share of a GPU (--gpu-share); for whole GPUs ask for their least memory")
	case s.GPUMemBytes > maxBytes:
		return refuse("gpu-mem", "%d bytes of GPU memory is more than any GPU has", s.GPUMemBytes)
	case s.MIGProfile == "":
		return nil
	case !migProfileName.MatchString(s.MIGProfile):
		return refuse("mig profile", "%q is not a MIG profile (like 1g.10gb or 3g.40gb; labpool gpus lists them)", s.MIGProfile)
	case len(s.GPUIDs) > 0 || len(s.MIGIDs) > 0:
		return refuse("mig profile", "ask for MIG instances by profile, or by UUID, or for GPU indexes, one of them")
	case s.GPUs > maxMIG:
		return refuse("mig profile", "%d MIG instances asked: at most %d", s.GPUs, maxMIG)
	}
	return nil
}
