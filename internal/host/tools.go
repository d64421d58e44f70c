package host

// Tools is the one explicit list of the proc toolset in normal delivery
// mode: every proc tool's declaration (schema, arguments type, host
// handler), in the order tools/list publishes them. The host registers
// their handlers (New) and the bridge publishes and forwards them. A new
// proc tool is added here and nowhere else.
func Tools() []Decl { return ToolsFor(Delivery{}) }

// ToolsFor is Tools with the defaults of delivery mode d stated in the
// descriptions and schemas (raw mode: 100-row pages, wait_ms 0). The
// handlers are the same in every mode.
func ToolsFor(d Delivery) []Decl {
	return append([]Decl{
		getStatusTool,
		getSystemInfoTool,
		listMetricsTool,
		listProcessesTool(d),
		getMetricsTool(),
		startCaptureTool(d),
		getProcessInfoTool(d),
		getJobTool(d),
		readCaptureTool(d),
		cancelJobTool,
		releaseCaptureTool,
		getHistoryTool(d),
		getTrackingTool,
		updateTrackingTool(d),
		listProfilesTool,
		updateProfileTool(d),
		getOperationTool,
		waitConditionTool(d),
		rankProcessesTool(),
		getRecordingTool,
		startRecordingTool(d),
		stopRecordingTool(d),
		listLogsTool(d),
		openLogTool(d),
		closeLogTool,
		getRuntimeCollectionTool,
		setRuntimeCollectionTool(d),
	}, graphTools(d)...)
}
