package slurm

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// `sinfo --json` has two shapes. v0.0.38 (22.05) lists "nodes", one
// object per node. v0.0.40+ (23.11+) lists "sinfo": groups of nodes that
// share a partition and a state, each with its partition, its node names
// and addresses, and GRES totals and use for the whole group.

type sinfoJSON struct {
	Meta  metaJSON        `json:"meta"`
	Nodes []nodeJSON      `json:"nodes"`
	Sinfo []sinfoGroupRaw `json:"sinfo"`
}

type nodeJSON struct {
	Name        text   `json:"name"`
	Address     text   `json:"address"`
	State       flags  `json:"state"`
	StateFlags  flags  `json:"state_flags"`
	Reason      text   `json:"reason"`
	Partitions  text   `json:"partitions"`
	CPUs        number `json:"cpus"`
	AllocCPUs   number `json:"alloc_cpus"`
	RealMemory  number `json:"real_memory"`
	AllocMemory number `json:"alloc_memory"`
	Gres        text   `json:"gres"`
	GresUsed    text   `json:"gres_used"`
}

type sinfoGroupRaw struct {
	Node struct {
		State flags `json:"state"`
	} `json:"node"`
	Nodes struct {
		Total     number `json:"total"`
		Nodes     text   `json:"nodes"`
		Addresses text   `json:"addresses"`
	} `json:"nodes"`
	CPUs struct {
		Allocated number `json:"allocated"`
		Total     number `json:"total"`
	} `json:"cpus"`
	Memory struct {
		Maximum   number `json:"maximum"`
		Allocated number `json:"allocated"`
	} `json:"memory"`
	Gres struct {
		Total text `json:"total"`
		Used  text `json:"used"`
	} `json:"gres"`
	Reason struct {
		Description text `json:"description"`
	} `json:"reason"`
	Partition struct {
		Name text `json:"name"`
	} `json:"partition"`
}

// ParseSinfo reads `sinfo --json` of any supported Slurm version into its
// nodes, sorted by name. In a v0.0.40+ group of several nodes, Slurm gives
// GPU use for the group only: each node's Alloc is then left 0 and
// ReadCluster fills it from the queue.
func ParseSinfo(data []byte) (Meta, []Node, error) {
	var out sinfoJSON
	if err := json.Unmarshal(data, &out); err != nil {
		return Meta{}, nil, fmt.Errorf("read sinfo json: %w", err)
	}
	byName := map[string]*Node{}
	for _, n := range out.Nodes {
		node := n.node()
		byName[node.Name] = &node
	}
	for _, g := range out.Sinfo {
		g.merge(byName)
	}
	nodes := make([]Node, 0, len(byName))
	for _, n := range byName {
		sort.Strings(n.Partitions)
		nodes = append(nodes, *n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return out.Meta.meta(), nodes, nil
}

func (n nodeJSON) node() Node {
	var parts []string
	if n.Partitions != "" {
		parts = strings.Split(string(n.Partitions), ",")
	}
	return Node{
		Name:       string(n.Name),
		State:      nodeState(append(n.State, n.StateFlags...)),
		Reason:     string(n.Reason),
		Partitions: parts,
		Addr:       string(n.Address),
		CPUs:       int(n.CPUs.value(0)),
		CPUsAlloc:  int(n.AllocCPUs.value(0)),
		MemoryMB:   n.RealMemory.value(0),
		MemAllocMB: n.AllocMemory.value(0),
		GPUs:       withAlloc(ParseGRES(string(n.Gres)), ParseGRES(string(n.GresUsed))),
	}
}

// merge adds a v0.0.40+ group's nodes to byName.
func (g sinfoGroupRaw) merge(byName map[string]*Node) {
	names, err := ExpandHostlist(string(g.Nodes.Nodes))
	if err != nil || len(names) == 0 {
		return
	}
	addrs, _ := ExpandHostlist(string(g.Nodes.Addresses))
	count := len(names)
	total := ParseGRES(string(g.Gres.Total))
	var used []GPUCount
	if count == 1 {
		used = ParseGRES(string(g.Gres.Used))
	}
	for i, name := range names {
		n, ok := byName[name]
		if !ok {
			n = &Node{Name: name, State: nodeState(g.Node.State), Reason: string(g.Reason.Description)}
			if i < len(addrs) {
				n.Addr = addrs[i]
			}
			n.CPUs = int(g.CPUs.Total.value(0)) / count
			n.MemoryMB = g.Memory.Maximum.value(0)
			n.GPUs = withAlloc(total, used)
			if count == 1 {
				n.CPUsAlloc = int(g.CPUs.Allocated.value(0))
				n.MemAllocMB = g.Memory.Allocated.value(0)
			}
			byName[name] = n
		}
		if p := string(g.Partition.Name); p != "" && !contains(n.Partitions, p) {
			n.Partitions = append(n.Partitions, p)
		}
	}
}

// nodeState reads a node's state flags as one word for people: the base
// state, lower case, with the flags that matter ("idle", "mixed+drain",
// "down+not_responding").
func nodeState(f flags) string {
	if len(f) == 0 {
		return "unknown"
	}
	s := strings.ToLower(f[0])
	for _, x := range f[1:] {
		switch x {
		case "DRAIN", "NOT_RESPONDING", "MAINTENANCE", "RESERVED", "FAIL",
			"COMPLETING", "POWERED_DOWN", "REBOOT_REQUESTED":
			if x = strings.ToLower(x); !strings.Contains(s, x) {
				s += "+" + x
			}
		}
	}
	return s
}

func contains(a []string, s string) bool {
	for _, x := range a {
		if x == s {
			return true
		}
	}
	return false
}
