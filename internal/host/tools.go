package host

// Tools is the one explicit list of the proc toolset in normal delivery
// mode: every proc tool's declaration (schema, arguments type, host
// handler), in the order tools/list publishes them. The host registers
// their handlers (New) and the bridge publishes and forwards them. A new
// proc tool is added to toolTable and nowhere else.
func Tools() []Decl { return ToolsFor(Delivery{}) }

// ToolsFor is Tools with the defaults of delivery mode d stated in the
// descriptions and schemas (raw mode: 100-row pages, wait_ms 0). The
// handlers are the same in every mode.
func ToolsFor(d Delivery) []Decl {
	out := make([]Decl, 0, len(toolTable))
	for _, e := range toolTable {
		out = append(out, e.decl(d))
	}
	return out
}

// ToolsNamed is ToolsFor limited to the named tools, in ToolsFor's order,
// building only their declarations (a command that calls one tool does not
// build every schema). Names that are no proc tool are skipped.
func ToolsNamed(d Delivery, names ...string) []Decl {
	var out []Decl
	for _, e := range toolTable {
		for _, n := range names {
			if n == e.name {
				out = append(out, e.decl(d))
				break
			}
		}
	}
	return out
}

// toolEntry is one proc tool of toolTable: its name and its declaration,
// fixed (the same in every delivery mode) or built for a mode by build.
// The table is static data: nothing runs at package initialisation.
type toolEntry struct {
	name  string
	fixed *Decl
	build func(Delivery) Decl
}

// decl is the entry's declaration in delivery mode d.
func (e *toolEntry) decl(d Delivery) Decl {
	if e.fixed != nil {
		return *e.fixed
	}
	return e.build(d)
}

// toolTable lists the proc tools in tools/list order. TestToolsNamed
// holds each name equal to the name of the declaration its constructor
// builds.
var toolTable = []toolEntry{
	{name: "get_status", fixed: &getStatusTool},
	{name: "get_system_info", fixed: &getSystemInfoTool},
	{name: "list_metrics", fixed: &listMetricsTool},
	{name: "list_processes", build: listProcessesTool},
	{name: "get_metrics", build: func(Delivery) Decl { return getMetricsTool() }},
	{name: "start_capture", build: startCaptureTool},
	{name: "get_process_info", build: getProcessInfoTool},
	{name: "get_job", build: getJobTool},
	{name: "read_capture", build: readCaptureTool},
	{name: "cancel_job", fixed: &cancelJobTool},
	{name: "release_capture", fixed: &releaseCaptureTool},
	{name: "get_history", build: getHistoryTool},
	{name: "get_tracking", fixed: &getTrackingTool},
	{name: "update_tracking", build: updateTrackingTool},
	{name: "list_profiles", fixed: &listProfilesTool},
	{name: "update_profile", build: updateProfileTool},
	{name: "get_operation", fixed: &getOperationTool},
	{name: "wait_condition", build: waitConditionTool},
	{name: "rank_processes", build: func(Delivery) Decl { return rankProcessesTool() }},
	{name: "get_recording", fixed: &getRecordingTool},
	{name: "start_recording", build: startRecordingTool},
	{name: "stop_recording", build: stopRecordingTool},
	{name: "list_logs", build: listLogsTool},
	{name: "open_log", build: openLogTool},
	{name: "close_log", fixed: &closeLogTool},
	{name: "get_runtime_collection", fixed: &getRuntimeCollectionTool},
	{name: "set_runtime_collection", build: setRuntimeCollectionTool},
	{name: "get_graphs", build: getGraphsTool},
	{name: "add_graphs", build: addGraphsTool},
	{name: "export_graphs", build: exportGraphsTool},
}
