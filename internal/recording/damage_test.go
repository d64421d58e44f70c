package recording

import (
	"encoding/binary"
	"strings"
	"testing"
)

// Damage messages state the true position (byte offsets, "before the
// first sample frame" when no frame precedes) and say reading resumed only
// when it did, and where.
func TestDamagePosition(t *testing.T) {
	type want struct {
		frames     uint64
		after      int64
		skipped    int
		resumed    string
		has, hasNo []string
	}
	cases := []struct {
		name   string
		frames int
		end    bool
		damage func(b []byte, offs []int64)
		want   want
	}{
		{"first frame length 0xFFFFFFFF, end record follows", 3, true,
			func(b []byte, offs []int64) { binary.LittleEndian.PutUint32(b[offs[0]+4:], 0xFFFFFFFF) },
			want{0, -1, 2, ResumedEndRecord, []string{"before the first sample frame", "no keyframe followed", "the end record at byte"}, []string{"-1", "resumed"}}},
		{"first frame length 0xFFFFFFFF, only frame, end record follows", 1, true,
			func(b []byte, offs []int64) { binary.LittleEndian.PutUint32(b[offs[0]+4:], 0xFFFFFFFF) },
			want{0, -1, 0, ResumedEndRecord, []string{"before the first sample frame"}, []string{"-1", "resumed", "skipped"}}},
		{"middle frame flipped, keyframe follows", 150, true,
			func(b []byte, offs []int64) { b[offs[70]+20] ^= 0x40 },
			want{100, 69, 49, ResumedKeyframe, []string{"after sample frame 69", "49 checksum-valid", "reading resumed at the keyframe at byte"}, nil}},
		{"middle frame flipped, no keyframe or end record follows", 60, false,
			func(b []byte, offs []int64) { b[offs[55]+20] ^= 0x40 },
			want{55, 54, 4, ResumedEndOfFile, []string{"after sample frame 54", "nothing after it up to the end of the file"}, []string{"resumed"}}},
	}
	for _, c := range cases {
		data, offs := record(t, c.frames, 4, c.end)
		c.damage(data, offs)
		l, err := LoadBytes(data)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		in := l.Info
		if in.Frames != c.want.frames || len(in.Damaged) != 1 {
			t.Fatalf("%s: frames %d damaged %+v torn %+v", c.name, in.Frames, in.Damaged, in.Torn)
		}
		d := in.Damaged[0]
		if d.AfterFrame != c.want.after || d.Skipped != c.want.skipped || d.Resumed != c.want.resumed {
			t.Fatalf("%s: %+v", c.name, d)
		}
		msg := d.Describe()
		if !strings.Contains(strings.Join(in.Problems(), " "), msg) || !strings.Contains(msg, "bytes ") {
			t.Fatalf("%s: %q not in problems", c.name, msg)
		}
		for _, s := range c.want.has {
			if !strings.Contains(msg, s) {
				t.Errorf("%s: %q lacks %q", c.name, msg, s)
			}
		}
		for _, s := range c.want.hasNo {
			if strings.Contains(msg, s) {
				t.Errorf("%s: %q has %q", c.name, msg, s)
			}
		}
		if in.Frames == 0 {
			if _, ok := l.FinalTime(); ok {
				t.Errorf("%s: a final time without frames", c.name)
			}
		}
	}
}
