//go:build race

package bin

// raceEnabled trims the robustness sweep under the race detector, which
// slows single-goroutine parsing tenfold without adding coverage there.
const raceEnabled = true
