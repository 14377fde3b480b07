package daemon

import "github.com/labpool/labpool/node/agent"

// SlurmMode says whether the agent stands for a Slurm cluster
// (agent.SlurmMode).
type SlurmMode = agent.SlurmMode

// Slurm modes.
const (
	SlurmOff  = agent.SlurmOff  // never (the window, labpool web)
	SlurmAuto = agent.SlurmAuto // when sinfo answers and no Docker engine is reachable
	SlurmOn   = agent.SlurmOn   // agent --slurm
)
