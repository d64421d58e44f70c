package har

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// distinctGETs returns n GETs of the URL identicalGETs uses, each with a
// different body: compared with identicalGETs(n), no sample matches.
func distinctGETs(n int) []byte {
	return bytes.ReplaceAll(identicalGETs(n), []byte(`"text":"xxxxxxxx`), []byte(`"text":"zzzzzzzz`))
}

// identicalGETs returns a HAR holding n identical GETs of one URL with the
// same 2 KiB body: one repeated-request group of n samples.
func identicalGETs(n int) []byte {
	var b bytes.Buffer
	body := bytes.Repeat([]byte("x"), 2048)
	b.WriteString(`{"log":{"version":"1.2","creator":{"name":"bench","version":"1"},"entries":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"startedDateTime":"2026-11-29T18:00:00Z","time":%d.5,"request":{"method":"GET","url":"https://x.test/same","headers":[]},"response":{"status":200,"content":{"size":2048,"mimeType":"text/plain","text":"%s"}},"timings":{"send":0,"wait":1,"receive":0.5}}`, i%7, body)
	}
	b.WriteString(`]}}`)
	return b.Bytes()
}

// manyEntries returns a HAR of n entries over n/4 URLs with ~450-byte
// bodies (200,000 entries is about 100 MB, the size of a long browser
// session capture).
func manyEntries(n int) []byte {
	var b bytes.Buffer
	body := bytes.Repeat([]byte("y"), 300)
	b.WriteString(`{"log":{"version":"1.2","creator":{"name":"bench","version":"1"},"entries":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"startedDateTime":"2026-11-29T18:00:00Z","time":%d,"request":{"method":"GET","url":"https://x.test/r/%d","headers":[{"name":"accept","value":"*/*"}]},"response":{"status":200,"content":{"size":%d,"mimeType":"text/plain","text":"%s%d"}},"timings":{"send":0,"wait":1,"receive":0.5},"_resourceType":"fetch"}`, i%50, i/4, len(body)+1, body, i%4)
	}
	b.WriteString(`]}}`)
	return b.Bytes()
}

func benchCompare(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		c, err := Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Compare(context.Background(), c, c, Complete, Complete); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompareIdenticalGETs is `har diff` of 32,000 identical GETs
// against themselves (one repeated-request group): parse both sides and
// compare.
func BenchmarkCompareIdenticalGETs(b *testing.B) { benchCompare(b, identicalGETs(32000)) }

// BenchmarkCompareNoneMatch is `har diff` of 32,000 identical GETs against
// 32,000 GETs of the same URL whose bodies all differ (the worst case for
// a pairwise matcher).
func BenchmarkCompareNoneMatch(b *testing.B) {
	l, r := identicalGETs(32000), distinctGETs(32000)
	b.SetBytes(int64(len(l) + len(r)))
	b.ReportAllocs()
	for b.Loop() {
		lc, err := Parse(l)
		if err != nil {
			b.Fatal(err)
		}
		rc, err := Parse(r)
		if err != nil {
			b.Fatal(err)
		}
		ds, err := Compare(context.Background(), lc, rc, Complete, Complete)
		if err != nil || ds[0].LeftAbsentCount != 32000 {
			b.Fatal(err, ds[0].LeftAbsentCount)
		}
	}
}

// BenchmarkCompareLarge is `har diff` of a 200,000-entry (~100 MB) capture.
func BenchmarkCompareLarge(b *testing.B) { benchCompare(b, manyEntries(200000)) }

// BenchmarkShowLarge is `har show` of a 200,000-entry capture: parse and
// group.
func BenchmarkShowLarge(b *testing.B) {
	data := manyEntries(200000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		c, err := Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Groups(context.Background(), c, 100); err != nil {
			b.Fatal(err)
		}
	}
}
