//go:build !linux

package sample

import (
	"runtime"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/load"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/process"
)

// PortableCollector samples through gopsutil on Windows and macOS. It is
// partial: see Platform for what it lacks.
type PortableCollector struct {
	ncpu int
}

// NewCollector returns the platform collector: gopsutil off Linux.
func NewCollector() (Collector, error) { return &PortableCollector{ncpu: runtime.NumCPU()}, nil }

// Platform lists the metrics gopsutil cannot provide here.
func (c *PortableCollector) Platform() Platform {
	return Platform{OS: runtime.GOOS, Collector: "gopsutil",
		Missing: []string{"swap_bytes", "major_faults", "minor_faults", "fd_count", "disk_read_bytes", "disk_write_bytes", "net_rx_bytes", "net_tx_bytes"},
		Notes:   []string{"process start times have millisecond resolution; identity uses them as ticks", "open-file, module, network, thread and scheduling captures are Linux-only"}}
}

// Collect samples every process gopsutil can list.
func (c *PortableCollector) Collect(prev *Snapshot) (*Snapshot, error) {
	start := time.Now()
	ps, err := process.Processes()
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{Time: start}
	if prev != nil {
		snap.Seq = prev.Seq + 1
	}
	for _, gp := range ps {
		var p Process
		p.PID = gp.Pid
		ct, err := gp.CreateTime()
		if err != nil {
			snap.Denied++
			continue
		}
		p.StartTicks = uint64(ct)
		p.StartTime = time.UnixMilli(ct)
		if pp, err := gp.Ppid(); err == nil {
			p.PPID = pp
		}
		p.Comm, _ = gp.Name()
		p.Exe, _ = gp.Exe()
		p.Name = FullName(p.Exe, "", p.Comm)
		if st, err := gp.Status(); err == nil && len(st) > 0 && len(st[0]) > 0 {
			p.State = st[0][0]
		}
		if u, err := gp.Uids(); err == nil && len(u) > 0 {
			p.UID, p.UIDKnown = uint32(u[0]), true
		}
		if m, err := gp.MemoryInfo(); err == nil {
			p.Set(PRSS, m.RSS)
			p.Set(PVirtual, m.VMS)
		}
		if n, err := gp.NumThreads(); err == nil {
			p.Set(PThreads, uint64(n))
		}
		if t, err := gp.Times(); err == nil {
			p.Set(PCPUTime, uint64((t.User+t.System)*1e9))
			if prev != nil {
				if q := prev.Lookup(p.ID()); q != nil && q.Has(PCPUTime) && p.Vals[PCPUTime] >= q.Vals[PCPUTime] {
					wall := start.Sub(prev.Time).Nanoseconds()
					if wall > 0 {
						p.Set(PCPUPercent, F(float64(p.Vals[PCPUTime]-q.Vals[PCPUTime])/(float64(wall)*float64(c.ncpu))*100))
					}
				}
			}
		}
		if io, err := gp.IOCounters(); err == nil {
			p.Set(PReadBytes, io.ReadBytes)
			p.Set(PWriteBytes, io.WriteBytes)
		}
		if cs, err := gp.NumCtxSwitches(); err == nil {
			p.Set(PVolCtx, uint64(cs.Voluntary))
			p.Set(PInvolCtx, uint64(cs.Involuntary))
		}
		snap.Procs = append(snap.Procs, p)
	}
	sortProcs(snap.Procs)
	sys := &snap.System
	sys.Set(SProcesses, uint64(len(snap.Procs)))
	if vm, err := mem.VirtualMemory(); err == nil {
		sys.Set(SMemTotal, vm.Total)
		sys.Set(SMemAvailable, vm.Available)
		sys.Set(SMemUsed, vm.Total-vm.Available)
	}
	if sw, err := mem.SwapMemory(); err == nil {
		sys.Set(SSwapTotal, sw.Total)
		sys.Set(SSwapUsed, sw.Used)
	}
	if la, err := load.Avg(); err == nil {
		sys.Set(SLoad1, F(la.Load1))
		sys.Set(SLoad5, F(la.Load5))
		sys.Set(SLoad15, F(la.Load15))
	}
	if pc, err := cpu.Percent(0, false); err == nil && len(pc) == 1 {
		sys.Set(SCPUPercent, F(pc[0]))
	}
	if pc, err := cpu.Percent(0, true); err == nil {
		sys.CoreCPUPercent = pc
	}
	snap.Duration = time.Since(start)
	return snap, nil
}
