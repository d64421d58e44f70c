package mcpserver

import (
	"encoding/json"
	"testing"
)

// The admission benchmarks: BenchmarkRefuse5MBArray is what the bridge
// spends refusing a 5.2 MB tools/call line holding an array of 2.6 M
// zeros (checkLine, the whole path from raw bytes to the error line it
// writes); BenchmarkDecode5MBJSON is the reference, encoding/json decoding
// the same bytes (valid JSON) into values, as a decoder without the
// streaming check would before the schema refused the array. Compare
// ns/op (and MB/s) of the two in one run:
//
//	go test ./internal/mcpserver -run XXX -bench 5MB -benchmem

func fiveMBLine() []byte { return toolCall(1, `{"v":`+zeros(2_600_000)+`}`) }

func BenchmarkRefuse5MBArray(b *testing.B) {
	line := fiveMBLine()
	b.SetBytes(int64(len(line)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if resp := checkLine(line); resp == nil {
			b.Fatal("the 5 MB array was not refused")
		}
	}
}

func BenchmarkDecode5MBJSON(b *testing.B) {
	line := fiveMBLine()
	b.SetBytes(int64(len(line)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			b.Fatal(err)
		}
	}
}
