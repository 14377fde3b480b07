package agent

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/labpool/labpool/node/alloc"
)

// Agents before the holder left gpu.Stats wrote it inside each GPU's
// reading: "job" and "holder" ("slurm job 123") on the GPU, "job",
// "owner" and "holder" on each process. Their samples still come from an
// old agent in the pool and lie in the history; UnmarshalJSON reads them
// into Holding, so the holder they name is still shown.

// legacyGPU is the holder an old agent wrote inside a GPU's reading.
type legacyGPU struct {
	UUID      string `json:"uuid"`
	Job       string `json:"job"`
	Holder    string `json:"holder"`
	Processes []struct {
		PID    uint32 `json:"pid"`
		Job    string `json:"job"`
		Owner  string `json:"owner"`
		Holder string `json:"holder"`
	} `json:"processes"`
}

// UnmarshalJSON reads a Sample, also one an old agent wrote: where the
// data has no holding, the holders named inside its GPU readings become
// its Holding.
func (s *Sample) UnmarshalJSON(data []byte) error {
	type plain Sample // without this method
	if err := json.Unmarshal(data, (*plain)(s)); err != nil {
		return err
	}
	if !s.Holding.Empty() || !bytes.Contains(data, []byte(`"job"`)) && !bytes.Contains(data, []byte(`"holder"`)) {
		return nil
	}
	var old struct {
		GPUs []legacyGPU `json:"gpus"`
	}
	if err := json.Unmarshal(data, &old); err != nil {
		return err
	}
	s.Holding = legacyHolding(old.GPUs)
	return nil
}

// legacyHolding is the Holding the readings of an old agent name.
func legacyHolding(gs []legacyGPU) alloc.Holding {
	var h alloc.Holding
	for _, g := range gs {
		if o := legacyHolder(g.Job, "", g.Holder); o.Held() {
			h.HoldGPU(g.UUID, o)
		}
		for _, p := range g.Processes {
			if o := legacyHolder(p.Job, p.Owner, p.Holder); o.Held() {
				h.HoldProc(p.PID, o)
			}
		}
	}
	return h
}

// legacyHolder is the holder an old agent named by job, owner and a
// scheduler's holder ("slurm job 123"); the zero Holder when none.
func legacyHolder(job, owner, holder string) alloc.Holder {
	switch {
	case holder != "":
		return alloc.Holder{Kind: alloc.SlurmJob, ID: strings.TrimPrefix(holder, "slurm job "), Name: holder, Job: job, Member: owner}
	case job != "":
		return alloc.Holder{Kind: alloc.Job, ID: job, Member: owner}
	}
	return alloc.Holder{}
}
