//go:build race

package host

// raceEnabled: under the race detector the sampler's tick takes seconds,
// so the process reads of one sample and its /proc/stat read are seconds
// apart and TestCPUAccountingCloses does not check the 2% closure.
const raceEnabled = true
