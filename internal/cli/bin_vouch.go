package cli

import (
	"slices"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/bin"
)

// inspectArches are the values of inspect_binary's arch argument.
var inspectArches = []string{"x86_64", "arm64", "i386", "arm", "ppc", "ppc64"}

// vouchInspectArgs reports whether the inspect_binary arguments `inquest
// bin inspect` built (path, and arch, digests, facets, limit, cursor
// from its flags) lie within the tool's input schema, so the call may
// skip compiling and running the schema (Registry.CallPrechecked). It
// answers false for anything it does not recognise: those arguments go
// through Registry.Call, whose INVALID_ARGUMENT names what is wrong.
// TestVouchInspectArgs holds it to the schema: every arguments object it
// vouches for passes Validate, and every one it refuses is rejected.
func vouchInspectArgs(args map[string]any) bool {
	for k, v := range args {
		switch k {
		case "path", "cursor":
			s, ok := v.(string)
			if !ok || s == "" || !utf8.ValidString(s) || utf8.RuneCountInString(s) > 4096 {
				return false
			}
		case "arch":
			s, ok := v.(string)
			if !ok || !slices.Contains(inspectArches, s) {
				return false
			}
		case "digests":
			if _, ok := v.(bool); !ok {
				return false
			}
		case "facets":
			fs, ok := v.([]string)
			if !ok || len(fs) < 1 || len(fs) > 8 {
				return false
			}
			for i, f := range fs {
				if !slices.Contains(bin.ListFacets, f) || slices.Contains(fs[:i], f) {
					return false
				}
			}
		case "limit":
			n, ok := v.(int)
			if !ok || n < 1 || n > bin.MaxLimit {
				return false
			}
		default:
			return false
		}
	}
	_, ok := args["path"]
	return ok
}
