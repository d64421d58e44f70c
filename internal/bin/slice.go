package bin

import (
	"context"
	"runtime"
	"sort"

	"github.com/inquest-dev/inquest/internal/contract"
)

// Slice names the architecture slice of a Mach-O universal (fat) file that
// an inspection describes: its architecture (lipo's name), and its file
// offset and size from the fat_arch entry.
type Slice struct {
	Arch   string `json:"arch"`
	Offset string `json:"offset"`
	Size   string `json:"size"`
}

// sliceArchs maps the arch selector (lipo's names) to the header's
// machine names of every format (Mach-O cputype, ELF e_machine, PE
// Machine).
var sliceArchs = map[string][]string{
	"x86_64": {"CpuAmd64", "EM_X86_64", "IMAGE_FILE_MACHINE_AMD64"},
	"arm64":  {"CpuArm64", "EM_AARCH64", "IMAGE_FILE_MACHINE_ARM64"},
	"i386":   {"Cpu386", "EM_386", "IMAGE_FILE_MACHINE_I386"},
	"arm":    {"CpuArm", "EM_ARM", "IMAGE_FILE_MACHINE_ARMNT"},
	"ppc":    {"CpuPpc", "EM_PPC"},
	"ppc64":  {"CpuPpc64", "EM_PPC64"},
}

// hostArch is the arch selector of the machine inquest runs on.
func hostArch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "386":
		return "i386"
	case "ppc64", "ppc64le":
		return "ppc64"
	}
	return runtime.GOARCH
}

func archName(machine string) string {
	for a, names := range sliceArchs {
		for _, n := range names {
			if n == machine {
				return a
			}
		}
	}
	return ""
}

// selectSlice narrows a universal file to the slice arch names (the
// host's when arch is "" and hostDefault is set), inspecting the slice's
// bytes; the returned File keeps the whole file's identity with the
// slice's bytes as Data. For any other file a given arch must match the
// file's machine. Errors are INVALID_ARGUMENT (field /arch) naming the
// available slices.
func selectSlice(ctx context.Context, f *File, in *Inspection, arch string, hostDefault, digests bool) (*File, *Inspection, error) {
	machine := ""
	if in.Header.Machine != nil {
		machine = in.Header.Machine.Name
	}
	if in.Header.Format != FormatMachOFat {
		if arch != "" && archName(machine) != arch {
			e := contract.Errorf(contract.CodeInvalidArgument, "the file is not of architecture %s (its machine is %s)", arch, machine)
			e.Field = "/arch"
			return nil, nil, e
		}
		return f, in, nil
	}
	if arch == "" && !hostDefault {
		return f, in, nil
	}
	want := arch
	if want == "" {
		want = hostArch()
	}
	var avail []string
	for _, m := range in.Members {
		a := ""
		if m.CPU != nil {
			a = archName(m.CPU.Name)
		}
		avail = append(avail, a)
		if a != want {
			continue
		}
		off, err1 := parseDec(m.Offset)
		size, err2 := parseDec(m.Size)
		b, ok := sliceAt(f.Data, off, size)
		if err1 != nil || err2 != nil || !ok {
			e := contract.Errorf(contract.CodeInvalidArgument, "the %s slice lies outside the file", want)
			e.Field = "/arch"
			return nil, nil, e
		}
		sin, err := inspect(ctx, b, digests)
		if err != nil {
			return nil, nil, err
		}
		sin.Slice = &Slice{Arch: want, Offset: m.Offset, Size: m.Size}
		// sf owns f's mapping from here: closing sf releases it.
		sf := &File{CallerPath: f.CallerPath, Size: f.Size, ModTime: f.ModTime, Data: b, whole: f.Data, unmap: f.unmap, state: f.state}
		f.unmap = nil
		return sf, sin, nil
	}
	sort.Strings(avail)
	why := "the universal file has no %s slice"
	if arch == "" {
		why = "the universal file has no slice for the host's architecture %s; pass arch"
	}
	e := contract.Errorf(contract.CodeInvalidArgument, why, want).WithDetail("available_archs", avail)
	e.Field = "/arch"
	return nil, nil, e
}
