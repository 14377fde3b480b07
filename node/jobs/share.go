package jobs

import (
	"fmt"
	"math"
	"regexp"

	"github.com/labpool/labpool/node/gpu"
)

// A GPU share (Spec.GPUShare) is a fraction of one GPU: where the machine
// runs MPS (node/mps), the job's processes get that fraction of the GPU's
// threads and, with Spec.GPUMemBytes, a pinned memory cap; elsewhere the
// share is time-sliced, counted the same way but capped by nothing.

// Bounds of a share.
const (
	// MinGPUShare is the finest share: MPS caps threads in whole percent.
	MinGPUShare = 0.01
	// minShareMem is the least memory cap worth a CUDA context.
	minShareMem = 64 << 20
)

// migProfileForm is what a MIG profile looks like: "3g.40gb", "1g.10gb+me",
// "1c.3g.40gb" (a compute instance of a 3g.40gb GPU instance).
var migProfileForm = regexp.MustCompile(`^(?:[1-8]c\.)?[1-8]g\.[0-9]{1,4}gb(?:\+(?:me|gfx))?$`)

// validateShare checks a share, its memory cap and a MIG profile: a share
// in [0.01, 1) of one GPU, alone; a memory cap only with a share; a
// profile alone or with a count.
func validateShare(s Spec) error {
	switch {
	case s.GPUShare == 0 && s.GPUMemBytes > 0:
		return refuse("gpu-mem", "a GPU memory cap goes with a share (--gpu-share); for whole GPUs with at least this much memory, ask --min-gpu-mem")
	case s.GPUShare == 0:
		return validateMIGProfile(s)
	case math.IsNaN(s.GPUShare) || s.GPUShare < MinGPUShare || s.GPUShare >= 1:
		return refuse("gpu-share", "a GPU share of %v: a share is a fraction of one GPU, from %v up to below 1 (for a whole GPU, ask --gpus 1)", s.GPUShare, MinGPUShare)
	case s.GPUs > 1 || len(s.GPUIDs) > 0 || len(s.MIGIDs) > 0 || s.MIGProfile != "":
		return refuse("gpu-share", "a share is of one GPU that the ledger picks: ask a share, or GPUs, GPU indexes or MIG instances, not both")
	case s.GPUMemBytes > 0 && s.GPUMemBytes < minShareMem:
		return refuse("gpu-mem", "a GPU memory cap of %d bytes: at least 64 MiB", s.GPUMemBytes)
	case s.GPUMemBytes > maxBytes:
		return refuse("gpu-mem", "%d bytes of GPU memory is more than any GPU has", s.GPUMemBytes)
	}
	return nil
}

// validateMIGProfile checks a MIG profile's form, and that it comes alone
// or with a count (of instances).
func validateMIGProfile(s Spec) error {
	switch {
	case s.MIGProfile == "":
		return nil
	case len(s.MIGProfile) > 32 || !migProfileForm.MatchString(s.MIGProfile):
		return refuse("mig-profile", "%q is not a MIG profile (like 1g.10gb or 3g.40gb; labpool gpus lists a machine's)", s.MIGProfile)
	case len(s.GPUIDs) > 0 || len(s.MIGIDs) > 0:
		return refuse("mig-profile", "ask for MIG instances by profile (with a count in --gpus) or by UUID, not both, and not with GPU indexes")
	}
	return nil
}

// ValidateShareMem refuses a share where this machine has no GPU, and a
// share's memory cap above the memory of its largest GPU (gpus, as read
// now), naming that GPU's memory: no GPU here could ever hold it.
func ValidateShareMem(s Spec, gpus []gpu.Stats) error {
	if s.GPUShare <= 0 {
		return nil
	}
	if len(gpus) == 0 {
		return refuse("gpu-share", "a GPU share asked: this machine has no GPU")
	}
	big := gpus[0]
	for _, g := range gpus[1:] {
		if g.MemTotalBytes > big.MemTotalBytes {
			big = g
		}
	}
	if s.GPUMemBytes > big.MemTotalBytes {
		return refuse("gpu-mem", "a share capped at %s of GPU memory: the largest GPU here (GPU %d, %s) has %s",
			FormatGiB(s.GPUMemBytes), big.Index, big.Name, FormatGiB(big.MemTotalBytes))
	}
	return nil
}

// FormatGiB writes b in GiB: whole ("20 GiB") where it is, else to a tenth
// ("1.5 GiB").
func FormatGiB(b uint64) string {
	if b%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", b>>30)
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}

// How a job's GPU share is enforced (Job.ShareMode).
const (
	ShareMPS        = "mps"         // an MPS control daemon caps threads and memory
	ShareTimeSliced = "time-sliced" // the GPU's time slicing: nothing capped
)

// shareMode is how caps's executor would enforce s's share; "" for no
// share.
func shareMode(s Spec, caps Capabilities) string {
	switch {
	case s.GPUShare <= 0:
		return ""
	case caps.MPS:
		return ShareMPS
	}
	return ShareTimeSliced
}

// ShareNote says in one sentence how j shares its GPU, "" when it holds
// whole GPUs: what is capped, or, time-sliced, plainly that nothing is.
func (j Job) ShareNote() string {
	s := j.Spec
	if s.GPUShare <= 0 {
		return ""
	}
	pct := int(math.Round(s.GPUShare * 100))
	if j.ShareMode == ShareMPS {
		mem := "GPU memory not capped (no --gpu-mem)"
		if s.GPUMemBytes > 0 {
			mem = "GPU memory capped at " + FormatGiB(s.GPUMemBytes)
		}
		return fmt.Sprintf("a %d%% MPS share: %d%% of the GPU's threads, %s", pct, pct, mem)
	}
	return fmt.Sprintf("a %d%% time-sliced share, uncapped: this machine runs no MPS, so the job may use all of the GPU's compute and memory, and so may the others on it", pct)
}
