// Package app is the service layer that the window, the browser UI and the
// CLI call: the pool view (nodes, GPUs, history), pool membership, and the
// events that keep a UI live.
//
// The local API (app/web) serves these types as JSON over HTTP on a unix
// socket in the data directory (CLI) and on loopback TCP (browser):
//
//	GET    /api/v1/self                      -> Self
//	GET    /api/v1/nodes                     -> []Node
//	GET    /api/v1/gpus                      -> []GPU
//	GET    /api/v1/history?node=ID&seconds=N -> History
//	GET    /api/v1/pool                      -> PoolStatus
//	POST   /api/v1/pool/create               -> JoinCode
//	POST   /api/v1/pool/join  JoinRequest    -> PoolStatus
//	DELETE /api/v1/pool/members/{id}         -> 204
//	GET    /api/v1/events                    -> text/event-stream of Event
//
// Errors are {"code": "...", "message": "..."} with a 4xx/5xx status.
package app

import (
	"github.com/labpool/labpool/node/lend"
	"time"

	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/slurm"
)

// APIVersion is the version of the local API and of the wire protocol.
const APIVersion = 1

// Event names, mirrored in frontend/src/api/events.ts.
const (
	// EventNodes carries []Node: the whole pool view, sent at most a few
	// times a second (coalesced).
	EventNodes = "pool:nodes"
	// EventSample carries Sample: one new live sample of one node.
	EventSample = "node:sample"
)

// Event is one message on the events stream.
type Event struct {
	Name string `json:"name"`
	Data any    `json:"data"`
}

// Self describes the machine this daemon runs on.
type Self struct {
	ID         string `json:"id"`
	ShortID    string `json:"short_id"`
	Name       string `json:"name"`
	Version    string `json:"version"`
	APIVersion int    `json:"api_version"`
	DataDir    string `json:"data_dir"`
	Listen     string `json:"listen"`
}

// Node is one member of the pool (this machine included) as last known.
type Node struct {
	ID        string     `json:"id"`
	ShortID   string     `json:"short_id"`
	Name      string     `json:"name"`
	Self      bool       `json:"self"`
	Online    bool       `json:"online"` // a live, pinned session (or this machine)
	Stale     bool       `json:"stale"`  // values are last known, not live
	Addresses []string   `json:"addresses"`
	LastSeen  time.Time  `json:"last_seen"`
	Info      NodeInfo   `json:"info"`
	Host      *HostStats `json:"host,omitempty"`
	GPUs      []GPU      `json:"gpus"`
	GPUError  string     `json:"gpu_error,omitempty"` // e.g. "no NVIDIA GPU found"
	// Containers says whether the node can run jobs (a Docker engine
	// answers there); ContainersError says why not.
	Containers      bool   `json:"containers"`
	ContainersError string `json:"containers_error,omitempty"`
	// Cluster is set where the machine stands for a Slurm cluster: its
	// partitions, nodes, GPUs by type and queue, as its agent last read
	// them (NodeRecord.Cluster).
	Cluster *slurm.Cluster `json:"cluster,omitempty"`
	// ClusterUsable counts the cluster's GPUs a job could get now, over
	// it and each partition (slurm.UsableGPUs): the UI shows these, never
	// counting them itself.
	ClusterUsable *slurm.ClusterUsable `json:"cluster_usable,omitempty"`
	// ClusterOwners names the members who launched the labpool jobs of
	// Cluster.Queue (device ID -> member name). A queue entry names a
	// labpool job and its owner only where that job's record, written by
	// this machine, agrees: a job's comment is anyone's to write on a
	// cluster.
	ClusterOwners map[string]string `json:"cluster_owners,omitempty"`
	// Alloc is the machine's own ledger as it publishes it (KindGrants):
	// its units and who holds them; nil where it publishes none (an
	// older machine: planners read its telemetry), or where its record was
	// refused (AllocError says why).
	Alloc      *Allocation `json:"alloc,omitempty"`
	AllocError string      `json:"alloc_error,omitempty"`
	// Lend is what the machine last said about its lending (node/lend):
	// lent, or its owner's and why; nil where it said nothing.
	Lend *lend.Status `json:"lend,omitempty"`
}

// NodeInfo is what changes rarely about a machine.
type NodeInfo struct {
	Hostname      string    `json:"hostname"`
	OS            string    `json:"os"`
	Kernel        string    `json:"kernel"`
	CPUModel      string    `json:"cpu_model"`
	Cores         int       `json:"cores"`
	MemTotalBytes uint64    `json:"mem_total_bytes"`
	Version       string    `json:"version"`
	StartedAt     time.Time `json:"started_at"`
	// GOOS and Arch are the OS and architecture the machine's labpool was
	// built for, as Go names them ("darwin", "arm64"); "" where its agent
	// does not say, or says something that is not such a name (rule "a
	// machine's OS and architecture are short Go names").
	GOOS string `json:"goos"`
	Arch string `json:"arch"`
	// BootTime is when the machine started, by its own clock; zero when
	// unknown.
	BootTime time.Time `json:"boot_time"`
}

// HostStats is one host sample, as the UI shows it.
type HostStats struct {
	CPUPercent    float64 `json:"cpu_percent"`
	Load1         float64 `json:"load1"`
	MemUsedBytes  uint64  `json:"mem_used_bytes"`
	MemTotalBytes uint64  `json:"mem_total_bytes"`
	Disks         []Disk  `json:"disks"`
	NetRxBps      float64 `json:"net_rx_bps"`
	NetTxBps      float64 `json:"net_tx_bps"`
}

// Disk is one mounted filesystem.
type Disk struct {
	Mount      string `json:"mount"`
	UsedBytes  uint64 `json:"used_bytes"`
	TotalBytes uint64 `json:"total_bytes"`
}

// GPUProcess is one process using a GPU, for people: its reading and who
// runs it (the sample's holding). Job and Owner are the labpool job and
// its owner (member ID); Holder the Slurm job it runs in ("slurm job
// 123"); all empty: outside labpool.
type GPUProcess struct {
	PID      uint32 `json:"pid"`
	MemBytes uint64 `json:"mem_bytes"` // 0 when NVML cannot tell
	Job      string `json:"job"`
	Owner    string `json:"owner"`
	Holder   string `json:"holder,omitempty"`
}

// GPU is one GPU of one node with its latest sample.
type GPU struct {
	Node           string  `json:"node"` // node ID
	NodeName       string  `json:"node_name"`
	Index          int     `json:"index"`
	UUID           string  `json:"uuid"`
	Name           string  `json:"name"`
	UtilPercent    float64 `json:"util_percent"`
	MemUtilPercent float64 `json:"mem_util_percent"`
	MemUsedBytes   uint64  `json:"mem_used_bytes"`
	MemTotalBytes  uint64  `json:"mem_total_bytes"`
	TempC          float64 `json:"temp_c"`
	PowerW         float64 `json:"power_w"`
	PowerLimitW    float64 `json:"power_limit_w"`
	SMClockMHz     int     `json:"sm_clock_mhz"`
	MemClockMHz    int     `json:"mem_clock_mhz"`
	FanPercent     int     `json:"fan_percent"` // -1 when the GPU has no fan
	Processes      int     `json:"processes"`
	// Health: "ok", "warning", "quarantined" or "lost" (see gpu.Stats),
	// and why when not ok.
	Health         string   `json:"health"`
	HealthReason   string   `json:"health_reason"`
	Throttle       []string `json:"throttle"`
	EnergyMJ       uint64   `json:"energy_mj"`
	XIDErrors      uint64   `json:"xid_errors"`
	ECCUncorrected uint64   `json:"ecc_uncorrected"`
	RetiredPending bool     `json:"retired_pending"`
	Job            string   `json:"job"` // the job holding the GPU, "" when free
	// Holder is who holds the GPU by a scheduler's word, for people:
	// "slurm job 123" on a Slurm compute node, with Job when labpool
	// launched that job through the cluster's agent. Both come from the
	// sample's holding (agent.Sample.Holding), not from the reading.
	Holder string `json:"holder,omitempty"`
	// JobName, JobOwner and JobOwnerName name that job and the member who
	// launched it (device ID and member name), once its record is here.
	JobName      string `json:"job_name,omitempty"`
	JobOwner     string `json:"job_owner,omitempty"`
	JobOwnerName string `json:"job_owner_name,omitempty"`
	// ProcessList is the GPU's processes with their memory, job and owner
	// (both empty: outside labpool); Processes is their count.
	ProcessList []GPUProcess `json:"process_list"`
	// PCIBusID, Links and MIG are what the node read at start: the GPU's
	// PCI address, how it reaches the node's other GPUs (NVLink, PCIe) and
	// its MIG mode and instances (nil: no MIG). See gpu.Info.
	PCIBusID string     `json:"pci_bus_id,omitempty"`
	Links    []gpu.Link `json:"links"`
	MIG      *gpu.MIG   `json:"mig,omitempty"`

	// MemReservedBytes is memory the driver keeps for itself, neither used
	// nor free (nvidia-smi's "Reserved"); 0 where the driver cannot say.
	MemReservedBytes uint64 `json:"mem_reserved_bytes"`
	// MemUnified: the GPU shares the system's memory (a GB10, DGX Spark):
	// MemUsedBytes and MemTotalBytes are the machine's, as its host meter
	// shows them; shown labelled "unified".
	MemUnified bool `json:"mem_unified,omitempty"`
}

// GPUClear is a quarantine an owner cleared (`labpool gpu clear`).
type GPUClear struct {
	Node     string    `json:"node"`
	NodeName string    `json:"node_name"`
	Index    int       `json:"index"`
	UUID     string    `json:"uuid"`
	Reason   string    `json:"reason"` // the fault it was quarantined for
	Since    time.Time `json:"since"`
}

// Sample is one point of a node's history: host and per-GPU figures.
type Sample struct {
	Node       string    `json:"node"`
	Time       time.Time `json:"time"`
	CPUPercent float64   `json:"cpu_percent"`
	MemPercent float64   `json:"mem_percent"`
	GPUUtil    []float64 `json:"gpu_util"`    // per GPU index
	GPUMemPct  []float64 `json:"gpu_mem_pct"` // per GPU index
}

// History is a node's samples over a window, oldest first.
type History struct {
	Node    string   `json:"node"`
	Samples []Sample `json:"samples"`
}

// PoolStatus says which pool this machine belongs to, if any, who is in
// it with which role, and what this machine may do.
type PoolStatus struct {
	PoolID  string   `json:"pool_id"` // empty when not in a pool
	Members []Member `json:"members"` // every device, removed ones included
	// People are who the members are: each with one name and role across
	// their devices, removed people and devices included.
	People   []Person `json:"people"`
	Invites  []Invite `json:"invites"`   // shown to admins and owners only
	SelfID   string   `json:"self_id"`   // this machine's device ID
	SelfRole string   `json:"self_role"` // "" when not in a pool
	// Removed says who removed this machine from the pool, and when; nil
	// while it is a member (or in no pool).
	Removed *Removal `json:"removed,omitempty"`
	Can     Can      `json:"can"`
}

// Removal is who removed a device from the pool, and when.
type Removal struct {
	By     string    `json:"by"`      // the remover's device ID (this device, when it left)
	ByName string    `json:"by_name"` // the remover's name in the pool
	At     time.Time `json:"at"`
}

// Can says what this machine's role allows in the pool.
type Can struct {
	Launch        bool   `json:"launch"`         // member and above: launch, copy, share
	ManageMembers bool   `json:"manage_members"` // admin and above: invites, members and viewers
	ManageAdmins  bool   `json:"manage_admins"`  // owner: admins and owners
	Why           string `json:"why,omitempty"`  // why Launch is false
}

// Member is one device admitted to the pool.
type Member struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Role    string    `json:"role"` // owner, admin, member or viewer
	AddedAt time.Time `json:"added_at"`
	AddedBy string    `json:"added_by"`
	Removed bool      `json:"removed"`
	Online  bool      `json:"online"`
	Self    bool      `json:"self"`
	Creator bool      `json:"creator"`
	// PersonID is the person whose device it is (the device ID of that
	// person's first device); PersonName the person's name.
	PersonID   string `json:"person_id"`
	PersonName string `json:"person_name"`
}

// Person is who a member is: one name and one role across their devices.
type Person struct {
	ID      string         `json:"id"` // the device ID of its first device
	Name    string         `json:"name"`
	Role    string         `json:"role"`
	Devices []PersonDevice `json:"devices"` // in the pool
	Removed []PersonDevice `json:"removed"` // removed from it
	Active  bool           `json:"active"`  // whether a device of theirs is in the pool
	Self    bool           `json:"self"`    // whether this machine is a device of theirs
}

// PersonDevice is one device of a person.
type PersonDevice struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Online bool   `json:"online"`
	Self   bool   `json:"self"` // this machine
}

// Invite is a code's record: what role it grants, how often and how long.
type Invite struct {
	ID        string    `json:"id"`
	Role      string    `json:"role"`
	Uses      int       `json:"uses"` // 0: unlimited (an invite made before invites had a limit)
	Used      int       `json:"used"`
	UsesLeft  int       `json:"uses_left"` // -1: unlimited
	Expires   time.Time `json:"expires"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	State     string    `json:"state"` // active, expired, used up or revoked
}

// InviteRequest asks for a new invite: POST /api/v1/pool/invites.
type InviteRequest struct {
	Role           string `json:"role"`            // member (default), viewer or admin
	Uses           int    `json:"uses"`            // 0: one
	ExpiresSeconds int64  `json:"expires_seconds"` // 0: 24 hours
}

// NewInvite is a new invite and the code to hand over.
type NewInvite struct {
	Invite Invite `json:"invite"`
	Code   string `json:"code"`
}

// RoleRequest changes a member's role: PUT /api/v1/pool/members/{id}/role.
type RoleRequest struct {
	Role string `json:"role"`
}

// CreateRequest asks the daemon to create a pool: POST /api/v1/pool/create.
type CreateRequest struct {
	As string `json:"as,omitempty"` // the creator's name as a person ("": the OS user's)
}

// AddDeviceRequest asks for a code that adds one device to a person:
// POST /api/v1/pool/devices.
type AddDeviceRequest struct {
	For string `json:"for,omitempty"` // a person's name ("": this machine's person)
}

// DeviceCode is a code that adds one device to a person: the new device
// runs `labpool pool join CODE HOST:PORT` and has the person's role at once.
type DeviceCode struct {
	Invite Invite `json:"invite"` // one use, an hour
	Code   string `json:"code"`
	Person string `json:"person"` // the person's name
	// Addresses are HOST:PORT where this machine may be reached (its
	// published addresses), for the join command.
	Addresses []string `json:"addresses"`
}

// MergeRequest asks to make person Who one with person Into (owners):
// POST /api/v1/pool/merge.
type MergeRequest struct {
	Who  string `json:"who"`
	Into string `json:"into"`
}

// JoinCode is printed by `labpool pool create`: the new pool, its first
// invite as the daemon made it (role, uses, expiry) and that invite's code.
type JoinCode struct {
	PoolID string `json:"pool_id"`
	Invite Invite `json:"invite"`
	Code   string `json:"code"`
	Person string `json:"person"` // the creator's name as a person
}

// JoinRequest asks the daemon to join a pool; Addr is an optional HOST:PORT
// used where multicast does not reach.
type JoinRequest struct {
	Code string `json:"code"`
	Addr string `json:"addr,omitempty"`
	As   string `json:"as,omitempty"` // the joiner's name as a person ("": the OS user's); a device code's person stands
}

// Error is the JSON body of every failed local API call.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ProbeResult says what a machine at an address answers to this one:
// POST /api/v1/probe {"addr": "HOST:PORT"} -> ProbeResult.
type ProbeResult struct {
	Addr    string `json:"addr"`
	ID      string `json:"id"`     // the device ID proven in the handshake
	Member  bool   `json:"member"` // whether it served us node info
	Status  int    `json:"status"` // HTTP status of GET /v1/node/info
	Message string `json:"message"`
}

// ProbeRequest asks the daemon to probe an address.
type ProbeRequest struct {
	Addr string `json:"addr"`
}
