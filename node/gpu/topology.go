//go:build linux && cgo

package gpu

import (
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// topoDevice is what reading topology and MIG asks of a Device. nvml.Device
// has it; a Device without it reads no topology and no MIG.
type topoDevice interface {
	GetPciInfo() (nvml.PciInfo, nvml.Return)
	GetNvLinkState(int) (nvml.EnableState, nvml.Return)
	GetNvLinkRemotePciInfo(int) (nvml.PciInfo, nvml.Return)
	GetNvLinkRemoteDeviceType(int) (nvml.IntNvLinkDeviceType, nvml.Return)
	GetTopologyCommonAncestor(nvml.Device) (nvml.GpuTopologyLevel, nvml.Return)
	GetMigMode() (int, int, nvml.Return)
	GetMaxMigDeviceCount() (int, nvml.Return)
	GetMigDeviceHandleByIndex(int) (nvml.Device, nvml.Return)
}

var _ topoDevice = nvml.Device(nil)

// nvlinks is what one GPU's NVLink links reach.
type nvlinks struct {
	busID   string         // this GPU's PCI bus ID
	direct  map[string]int // remote GPU's PCI bus ID -> active links to it
	switch_ int            // active links to NVSwitches
}

// readTopology fills the Links, PCIBusID and MIG of infos, whose devices
// are devs (nil: lost). It runs in Open, and again when a recheck finds a
// GPU that appeared or was lost, or a change of MIG (recheck.go).
func readTopology(infos []Info, devs []Device) {
	links := make([]nvlinks, len(devs))
	for i, d := range devs {
		if td, ok := d.(topoDevice); ok {
			links[i] = readNVLinks(td)
			infos[i].PCIBusID = links[i].busID
			infos[i].MIG = readMIG(td)
		}
	}
	for i, d := range devs {
		td, ok := d.(topoDevice)
		if !ok {
			continue
		}
		for k, other := range devs {
			if k == i || other == nil {
				continue
			}
			l := Link{Peer: infos[k].Index, PeerUUID: infos[k].UUID, NVLinks: links[i].to(links[k])}
			if od, ok := other.(nvml.Device); ok {
				if lvl, ret := td.GetTopologyCommonAncestor(od); ret == nvml.SUCCESS {
					l.PCIe = pcieName(lvl)
				}
			}
			if l.NVLinks > 0 || l.PCIe != "" { // else NVML told nothing about the pair
				infos[i].Links = append(infos[i].Links, l)
			}
		}
	}
}

// to is the number of NVLink links between a and b.
func (a nvlinks) to(b nvlinks) int {
	n := 0
	if b.busID != "" {
		n = a.direct[b.busID]
	}
	if a.switch_ > 0 && b.switch_ > 0 {
		n += min(a.switch_, b.switch_)
	}
	return n
}

// readNVLinks reads the state and far end of each of d's NVLink links.
func readNVLinks(d topoDevice) nvlinks {
	var l nvlinks
	if pci, ret := d.GetPciInfo(); ret == nvml.SUCCESS {
		l.busID = busID(pci.BusId[:])
	}
	for link := range nvml.NVLINK_MAX_LINKS {
		st, ret := d.GetNvLinkState(link)
		if ret == nvml.ERROR_INVALID_ARGUMENT || ret == nvml.ERROR_NOT_SUPPORTED && link == 0 {
			break // no such link, or no NVLink at all
		}
		if ret != nvml.SUCCESS || st != nvml.FEATURE_ENABLED {
			continue
		}
		if t, ret := d.GetNvLinkRemoteDeviceType(link); ret == nvml.SUCCESS && t == nvml.NVLINK_DEVICE_TYPE_SWITCH {
			l.switch_++
			continue
		}
		if pci, ret := d.GetNvLinkRemotePciInfo(link); ret == nvml.SUCCESS {
			if l.direct == nil {
				l.direct = map[string]int{}
			}
			l.direct[busID(pci.BusId[:])]++
		}
	}
	return l
}

// busID is a PCI bus ID as NVML writes it, NUL-terminated, in one case.
func busID(b []uint8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(c)
	}
	return strings.ToUpper(sb.String())
}

// pcieName is nvidia-smi's name for a topology level.
func pcieName(l nvml.GpuTopologyLevel) string {
	switch l {
	case nvml.TOPOLOGY_INTERNAL:
		return "SELF"
	case nvml.TOPOLOGY_SINGLE:
		return "PIX"
	case nvml.TOPOLOGY_MULTIPLE:
		return "PXB"
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return "PHB"
	case nvml.TOPOLOGY_NODE:
		return "NODE"
	case nvml.TOPOLOGY_SYSTEM:
		return "SYS"
	}
	return ""
}

// readMIG reads d's MIG mode and, when it is on, its instances. A GPU
// without MIG answers NOT_SUPPORTED, or room for no instance: nil.
func readMIG(d topoDevice) *MIG {
	cur, pending, ret := d.GetMigMode()
	if ret != nvml.SUCCESS {
		return nil
	}
	n, ret := d.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS || n == 0 {
		return nil
	}
	m := &MIG{Supported: true, Enabled: cur == nvml.DEVICE_MIG_ENABLE, Pending: pending != cur, Instances: []MIGInstance{}}
	if !m.Enabled {
		return m
	}
	for i := range n {
		md, ret := d.GetMigDeviceHandleByIndex(i)
		if ret != nvml.SUCCESS { // NOT_FOUND: no instance in this slot
			continue
		}
		if in, ok := readMIGInstance(md); ok {
			m.Instances = append(m.Instances, in)
		}
	}
	return m
}

// readMIGInstance reads one MIG device; ok is false without its UUID.
func readMIGInstance(md nvml.Device) (MIGInstance, bool) {
	var in MIGInstance
	uuid, ret := md.GetUUID()
	if ret != nvml.SUCCESS || uuid == "" {
		return in, false
	}
	in.UUID = uuid
	if name, ret := md.GetName(); ret == nvml.SUCCESS {
		in.Name = name
	}
	if gi, ret := md.GetGpuInstanceId(); ret == nvml.SUCCESS {
		in.GPUInstance = gi
	}
	if ci, ret := md.GetComputeInstanceId(); ret == nvml.SUCCESS {
		in.ComputeInstance = ci
	}
	if mem, ret := md.GetMemoryInfo(); ret == nvml.SUCCESS {
		in.MemTotalBytes = mem.Total
	}
	return in, true
}
