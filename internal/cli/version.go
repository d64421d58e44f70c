package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() { register(newVersionCmd) }

// buildVersion describes this build, from runtime/debug.ReadBuildInfo: the
// application version (Version), the main module's path and version
// ("(devel)" for a build from a work tree, vX.Y.Z for `go install
// ...@vX.Y.Z`), the VCS revision, its commit time and whether the tree had
// local modifications (empty when the build was not stamped, e.g.
// -buildvcs=false), and the Go toolchain and target.
type buildVersion struct {
	Version       string `json:"version"`
	Module        string `json:"module"`
	ModuleVersion string `json:"module_version"`
	Revision      string `json:"vcs_revision"`
	RevisionTime  string `json:"vcs_time"`
	Modified      *bool  `json:"vcs_modified"`
	Go            string `json:"go"`
	Platform      string `json:"platform"`
}

func readBuildVersion() buildVersion {
	v := buildVersion{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Module, v.ModuleVersion, v.Go = bi.Main.Path, bi.Main.Version, bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.RevisionTime = s.Value
		case "vcs.modified":
			m := s.Value == "true"
			v.Modified = &m
		}
	}
	return v
}

// versionJSON is `inquest version --json`: what setup --check compares.
func versionJSON() []byte {
	b, _ := json.Marshal(readBuildVersion())
	return append(b, '\n')
}

// String is the human form printed by `inquest version` and --version.
func (v buildVersion) String() string {
	unknown := func(s, why string) string {
		if s == "" {
			return "unknown (" + why + ")"
		}
		return s
	}
	mod := v.Module + " " + v.ModuleVersion
	if v.Module == "" {
		mod = "unknown (no build information)"
	}
	rev := unknown(v.Revision, "built without VCS stamping")
	if v.Revision != "" {
		if v.RevisionTime != "" {
			rev += " " + v.RevisionTime
		}
		if v.Modified != nil && *v.Modified {
			rev += " (modified)"
		}
	}
	return fmt.Sprintf("inquest %s\nmodule   %s\nrevision %s\ngo       %s %s\n", v.Version, mod, rev, v.Go, v.Platform)
}

func newVersionCmd(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, module version, VCS revision and Go version of this build",
		Long: `Print what this inquest build is: its version, the main module's version
((devel) for a build from a work tree), the VCS revision it was built from
and the Go toolchain, from the build information Go embeds in the binary.
--json prints the same as one JSON object.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				_, err := env.Stdout.Write(versionJSON())
				return err
			}
			_, err := fmt.Fprint(env.Stdout, readBuildVersion())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
