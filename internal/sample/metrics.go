// Package sample is the platform layer of the proc toolset: the metric
// catalog, immutable snapshots of every process and of the system, and the
// 1 Hz sampler that publishes them. On Linux the facts come from /proc (the
// per-process hot path reads /proc/PID/{stat,statm,status,io} and stat()s
// /proc/PID/fd with reused buffers; system facts come through
// github.com/prometheus/procfs); on Windows and macOS from
// github.com/shirou/gopsutil/v4, partially.
package sample

import "math"

// Target kinds of a metric.
const (
	TargetProcess = "process"
	TargetSystem  = "system"
)

// Representations: integer quantities travel as decimal strings, finite
// floating values as JSON numbers (list_metrics reports each metric's representation).
const (
	ReprInteger = "integer_string"
	ReprNumber  = "number"
)

// Metric describes one metric of the catalog published by list_metrics.
type Metric struct {
	// ID is the canonical identifier used in get_metrics and get_history.
	ID string `json:"id"`
	// Target is TargetProcess or TargetSystem.
	Target string `json:"target_kind"`
	// Unit is bytes, percent, count, nanoseconds or seconds.
	Unit string `json:"unit"`
	// Repr is ReprInteger or ReprNumber.
	Repr string `json:"representation"`
	// Cumulative is true for counters that only grow over a lifetime.
	Cumulative bool `json:"cumulative"`
	// Source is always "applied_samples": values come from published snapshots.
	Source string `json:"source"`
	// Description says what is measured and from which OS file.
	Description string `json:"description"`
	// Index is the metric's slot in Process.Vals or System.Vals.
	Index int `json:"-"`
}

// Process metric slots in Process.Vals.
const (
	PCPUPercent = iota
	PCPUTime
	PRSS
	PVirtual
	PSwap
	PThreads
	PFDs
	PMinorFaults
	PMajorFaults
	PReadBytes
	PWriteBytes
	PVolCtx
	PInvolCtx
	// The JVM family: read from the HotSpot performance-data file of a
	// process whose runtime collection is authorized (set_runtime_collection);
	// unavailable for every other process.
	PJVMHeapUsed
	PJVMHeapCommitted
	PJVMHeapMax
	PJVMEdenUsed
	PJVMSurvivorUsed
	PJVMOldUsed
	PJVMOldCommitted
	PJVMMetaspaceUsed
	PJVMMetaspaceCommitted
	PJVMYoungGCCount
	PJVMYoungGCTime
	PJVMOldGCCount
	PJVMOldGCTime
	PJVMThreadsLive
	PJVMClassesLoaded
	PJVMClassesUnloaded
	PJVMSafepoints
	PJVMSafepointTime
	PJVMJITTime
	NumProcessMetrics
)

// System metric slots in System.Vals.
const (
	SCPUPercent = iota
	SMemTotal
	SMemAvailable
	SMemUsed
	SCommitted
	SSwapTotal
	SSwapUsed
	SLoad1
	SLoad5
	SLoad15
	SDiskRead
	SDiskWrite
	SNetRx
	SNetTx
	SUptime
	SProcesses
	SCPUTime
	NumSystemMetrics
)

// ProcessMetrics is the process half of the catalog, indexed by slot.
var ProcessMetrics = [NumProcessMetrics]Metric{
	{ID: "cpu_percent", Unit: "percent", Repr: ReprNumber, Description: "CPU use over the last sampling interval as percent of total logical CPU capacity (all cores = 100); from utime+stime in /proc/PID/stat. Unavailable on a lifetime's first sample."},
	{ID: "cpu_time_ns", Unit: "nanoseconds", Repr: ReprInteger, Cumulative: true, Description: "user+system CPU time consumed by the lifetime; /proc/PID/stat fields 14-15 (clock ticks) in ns."},
	{ID: "rss_bytes", Unit: "bytes", Repr: ReprInteger, Description: "resident set size (RSS: file, anonymous and shared memory pages resident in RAM); /proc/PID/statm resident times the page size, the same count as VmRSS in /proc/PID/status that ps reports as RSS (KiB). 0 for kernel threads and zombies."},
	{ID: "virtual_bytes", Unit: "bytes", Repr: ReprInteger, Description: "virtual memory size (VmSize); /proc/PID/stat field 23."},
	{ID: "swap_bytes", Unit: "bytes", Repr: ReprInteger, Description: "swapped-out anonymous memory (VmSwap); /proc/PID/status. Unavailable for kernel threads."},
	{ID: "threads", Unit: "count", Repr: ReprInteger, Description: "number of threads; /proc/PID/stat field 20."},
	{ID: "fd_count", Unit: "count", Repr: ReprInteger, Description: "open file descriptors; the size of /proc/PID/fd (Linux 6.2+) or its entry count. Unavailable when access is denied."},
	{ID: "minor_faults", Unit: "count", Repr: ReprInteger, Cumulative: true, Description: "minor page faults; /proc/PID/stat field 10."},
	{ID: "major_faults", Unit: "count", Repr: ReprInteger, Cumulative: true, Description: "major page faults; /proc/PID/stat field 12."},
	{ID: "read_bytes", Unit: "bytes", Repr: ReprInteger, Cumulative: true, Description: "bytes the lifetime caused to be fetched from storage; read_bytes in /proc/PID/io. Unavailable when access is denied."},
	{ID: "write_bytes", Unit: "bytes", Repr: ReprInteger, Cumulative: true, Description: "bytes the lifetime caused to be sent to storage; write_bytes in /proc/PID/io. Unavailable when access is denied."},
	{ID: "voluntary_ctxt_switches", Unit: "count", Repr: ReprInteger, Cumulative: true, Description: "voluntary context switches; /proc/PID/status."},
	{ID: "nonvoluntary_ctxt_switches", Unit: "count", Repr: ReprInteger, Cumulative: true, Description: "involuntary context switches; /proc/PID/status."},
	{ID: "jvm_heap_used_bytes", Unit: "bytes", Repr: ReprInteger, Description: jvmSrc + "Java heap in use: eden + survivors + old (sun.gc.generation.0.space.{0,1,2}.used + sun.gc.generation.1.space.0.used; jstat -gc EU+S0U+S1U+OU)."},
	{ID: "jvm_heap_committed_bytes", Unit: "bytes", Repr: ReprInteger, Description: jvmSrc + "Java heap committed: the same spaces' .capacity (jstat -gc EC+S0C+S1C+OC)."},
	{ID: "jvm_heap_max_bytes", Unit: "bytes", Repr: ReprInteger, Description: jvmSrc + "Java heap maximum: the generations' sun.gc.generation.N.maxCapacity summed (under G1, whose generations each report the whole heap, the old generation's)."},
	{ID: "jvm_eden_used_bytes", Unit: "bytes", Repr: ReprInteger, Description: jvmSrc + "eden space in use; sun.gc.generation.0.space.0.used (jstat EU)."},
	{ID: "jvm_survivor_used_bytes", Unit: "bytes", Repr: ReprInteger, Description: jvmSrc + "both survivor spaces in use; sun.gc.generation.0.space.{1,2}.used (jstat S0U+S1U)."},
	{ID: "jvm_old_used_bytes", Unit: "bytes", Repr: ReprInteger, Description: jvmSrc + "old generation in use; sun.gc.generation.1.space.0.used (jstat OU)."},
	{ID: "jvm_old_committed_bytes", Unit: "bytes", Repr: ReprInteger, Description: jvmSrc + "old generation committed; sun.gc.generation.1.space.0.capacity (jstat OC)."},
	{ID: "jvm_metaspace_used_bytes", Unit: "bytes", Repr: ReprInteger, Description: jvmSrc + "metaspace in use; sun.gc.metaspace.used (jstat MU)."},
	{ID: "jvm_metaspace_committed_bytes", Unit: "bytes", Repr: ReprInteger, Description: jvmSrc + "metaspace committed; sun.gc.metaspace.capacity (jstat MC)."},
	{ID: "jvm_young_gc_count", Unit: "count", Repr: ReprInteger, Cumulative: true, Description: jvmSrc + "young collections; sun.gc.collector.0.invocations (jstat YGC)."},
	{ID: "jvm_young_gc_time_ns", Unit: "nanoseconds", Repr: ReprInteger, Cumulative: true, Description: jvmSrc + "time in young collections; sun.gc.collector.0.time ticks / sun.os.hrt.frequency (jstat YGCT)."},
	{ID: "jvm_old_gc_count", Unit: "count", Repr: ReprInteger, Cumulative: true, Description: jvmSrc + "full (old) collections; sun.gc.collector.1.invocations (jstat FGC)."},
	{ID: "jvm_old_gc_time_ns", Unit: "nanoseconds", Repr: ReprInteger, Cumulative: true, Description: jvmSrc + "time in full collections; sun.gc.collector.1.time ticks / sun.os.hrt.frequency (jstat FGCT)."},
	{ID: "jvm_threads_live", Unit: "count", Repr: ReprInteger, Description: jvmSrc + "live Java threads; java.threads.live."},
	{ID: "jvm_classes_loaded", Unit: "count", Repr: ReprInteger, Cumulative: true, Description: jvmSrc + "classes loaded; java.cls.loadedClasses + java.cls.sharedLoadedClasses (jstat -class Loaded)."},
	{ID: "jvm_classes_unloaded", Unit: "count", Repr: ReprInteger, Cumulative: true, Description: jvmSrc + "classes unloaded; java.cls.unloadedClasses + java.cls.sharedUnloadedClasses (jstat -class Unloaded)."},
	{ID: "jvm_safepoints", Unit: "count", Repr: ReprInteger, Cumulative: true, Description: jvmSrc + "safepoints reached; sun.rt.safepoints."},
	{ID: "jvm_safepoint_time_ns", Unit: "nanoseconds", Repr: ReprInteger, Cumulative: true, Description: jvmSrc + "time at safepoints; sun.rt.safepointTime ticks / sun.os.hrt.frequency."},
	{ID: "jvm_jit_compile_time_ns", Unit: "nanoseconds", Repr: ReprInteger, Cumulative: true, Description: jvmSrc + "JIT compilation time; java.ci.totalTime (sun.ci.totalTime) ticks / sun.os.hrt.frequency."},
}

// jvmSrc opens the description of every JVM metric.
const jvmSrc = "JVM (HotSpot performance data, /tmp/hsperfdata_USER/PID; only while runtime collection is authorized for the lifetime, see set_runtime_collection): "

// SystemMetrics is the system half of the catalog, indexed by slot.
var SystemMetrics = [NumSystemMetrics]Metric{
	{ID: "system_cpu_percent", Unit: "percent", Repr: ReprNumber, Description: "busy CPU over the last interval as percent of total logical capacity; /proc/stat cpu line."},
	{ID: "memory_total_bytes", Unit: "bytes", Repr: ReprInteger, Description: "MemTotal; /proc/meminfo."},
	{ID: "memory_available_bytes", Unit: "bytes", Repr: ReprInteger, Description: "MemAvailable; /proc/meminfo."},
	{ID: "memory_used_bytes", Unit: "bytes", Repr: ReprInteger, Description: "MemTotal - MemAvailable; /proc/meminfo."},
	{ID: "committed_as_bytes", Unit: "bytes", Repr: ReprInteger, Description: "Committed_AS; /proc/meminfo."},
	{ID: "swap_total_bytes", Unit: "bytes", Repr: ReprInteger, Description: "SwapTotal; /proc/meminfo."},
	{ID: "swap_used_bytes", Unit: "bytes", Repr: ReprInteger, Description: "SwapTotal - SwapFree; /proc/meminfo."},
	{ID: "load1", Unit: "count", Repr: ReprNumber, Description: "1-minute load average; /proc/loadavg."},
	{ID: "load5", Unit: "count", Repr: ReprNumber, Description: "5-minute load average; /proc/loadavg."},
	{ID: "load15", Unit: "count", Repr: ReprNumber, Description: "15-minute load average; /proc/loadavg."},
	{ID: "disk_read_bytes", Unit: "bytes", Repr: ReprInteger, Cumulative: true, Description: "sectors read by whole disks times 512; /proc/diskstats (partitions and virtual devices excluded)."},
	{ID: "disk_write_bytes", Unit: "bytes", Repr: ReprInteger, Cumulative: true, Description: "sectors written by whole disks times 512; /proc/diskstats."},
	{ID: "net_rx_bytes", Unit: "bytes", Repr: ReprInteger, Cumulative: true, Description: "bytes received on all interfaces except lo; /proc/net/dev."},
	{ID: "net_tx_bytes", Unit: "bytes", Repr: ReprInteger, Cumulative: true, Description: "bytes sent on all interfaces except lo; /proc/net/dev."},
	{ID: "uptime_seconds", Unit: "seconds", Repr: ReprNumber, Description: "time since boot; /proc/uptime."},
	{ID: "process_count", Unit: "count", Repr: ReprInteger, Description: "processes in the snapshot."},
	{ID: "system_cpu_time_ns", Unit: "nanoseconds", Repr: ReprInteger, Cumulative: true, Description: "user+nice+system CPU time of all CPUs since boot; /proc/stat cpu line (USER_HZ ticks) in ns."},
}

func init() {
	for i := range ProcessMetrics {
		ProcessMetrics[i].Index, ProcessMetrics[i].Target, ProcessMetrics[i].Source = i, TargetProcess, "applied_samples"
	}
	for i := range SystemMetrics {
		SystemMetrics[i].Index, SystemMetrics[i].Target, SystemMetrics[i].Source = i, TargetSystem, "applied_samples"
	}
}

// LookupMetric returns the catalog entry for id of either target kind.
func LookupMetric(id string) (Metric, bool) {
	for _, m := range ProcessMetrics {
		if m.ID == id {
			return m, true
		}
	}
	for _, m := range SystemMetrics {
		if m.ID == id {
			return m, true
		}
	}
	return Metric{}, false
}

// MetricIDs returns every metric id of the given target kind ("" for all).
func MetricIDs(target string) []string {
	var ids []string
	if target == "" || target == TargetProcess {
		for _, m := range ProcessMetrics {
			ids = append(ids, m.ID)
		}
	}
	if target == "" || target == TargetSystem {
		for _, m := range SystemMetrics {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// F encodes a float into a value slot.
func F(v float64) uint64 { return math.Float64bits(v) }

// AsFloat decodes a number slot.
func AsFloat(v uint64) float64 { return math.Float64frombits(v) }
