package ipc

// Test helpers of package ipc for the external tests (package ipc_test)
// that run a real host, which imports ipc.
var (
	Isolate           = isolate
	DialClient        = dialClient
	RawConn           = rawConn
	WaitFor           = waitFor
	Encode            = encode
	ReadListenerState = readListenerState
)
