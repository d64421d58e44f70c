//go:build !race

package bin

const raceEnabled = false
