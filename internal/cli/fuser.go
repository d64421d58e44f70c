package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newFuserCmd) }

func newFuserCmd(env *Env) *cobra.Command {
	var asJSON, substring bool
	var filter collectionFilter
	cmd := &cobra.Command{
		Use:   "fuser PATH",
		Short: "Processes using PATH (open, cwd, root, executable, mapped) as a table",
		Long: `Scan every readable process once (start_capture kind file_users with
filter.path, the same tool an MCP client calls) and list the processes
using PATH: pid, name, access, handle count, path, process_ref. ACCESS
gives each process's uses of PATH as psmisc's fuser -v prints them: f an
open fd (F when one is open for writing), r its root directory, c its
working directory, e its executable, m a memory mapping; '.' where a use
is absent. HANDLES counts the open fds (0 for a process whose only use is
another one). PATH must exist (else the command fails with exit 1, as
fuser does; --substring does not need it to); it is made absolute and its
symlinks are resolved. By default only rows whose path is exactly that
path, byte for byte, and that are not deleted are shown (a deleted file
that had the same name is another object; lsof PID shows it). For a
directory, the rows are the processes using the directory itself (an open
fd of it, or it as root or working directory), not files below it.
--substring shows every path matching all of PATH's terms, deleted ones
too. PATH may hold any bytes; paths are printed with control characters,
backslashes and bytes that are not UTF-8 escaped (\n, \\, \xff). PATH (and
--owner, an executable name) narrow the collection itself (start_capture
filter), so only matching rows are collected. --json prints the
start_capture envelope.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "" {
				return badFlag("PATH", "PATH is empty: give the file whose users to list")
			}
			// An exact-path lookup needs PATH to exist (as fuser does);
			// --substring is a term selector that also matches deleted
			// files, whose names no longer exist.
			if _, err := os.Lstat(args[0]); err != nil && !substring {
				if errors.Is(err, fs.ErrNotExist) {
					fmt.Fprintf(env.Stderr, "inquest fuser: %s: no such file or directory\n", textCell(args[0]))
				} else {
					fmt.Fprintf(env.Stderr, "inquest fuser: %s: %s\n", textCell(args[0]), cell(errText(err)))
				}
				return exitCode(1)
			}
			want, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			if r, err := filepath.EvalSymlinks(want); err == nil {
				want = r
			}
			path := want
			if substring {
				path = args[0]
			}
			return runCaptureCounted(cmd, env, asJSON, func(*tool.Registry) (map[string]any, error) {
				filter.paths = []string{path}
				return filter.apply(map[string]any{"kind": "file_users"}), nil
			}, func(w io.Writer, rows []map[string]any) int {
				// The collection filter is a term match, so for a
				// directory it also returns files below it; fuser DIR
				// (as psmisc's) means the directory itself, so only
				// rows whose path is exactly PATH are listed and
				// counted.
				return renderFuser(w, rows, want, substring)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the start_capture envelope")
	filter.register(cmd, false, true)
	cmd.Flags().BoolVar(&substring, "substring", false, "show every path containing all terms of PATH, not only PATH itself")
	return cmd
}

// errText is an OS error without the path it names (the caller prints the
// path itself, escaped).
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// renderFuser prints file_users rows: PID, NAME, ACCESS (accessCell),
// HANDLES, DELETED, PATH, PROCESS_REF. Unless substring, only rows whose path is exactly want and
// that are not deleted are listed; it returns how many it listed.
func renderFuser(w io.Writer, rows []map[string]any, want string, substring bool) int {
	out := bufio.NewWriter(w) // tabwriter writes cell by cell
	defer out.Flush()
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tNAME\tACCESS\tHANDLES\tDELETED\tPATH\tPROCESS_REF")
	n := 0
	for _, r := range rows {
		p, _ := exactText(r, "path")
		if !substring && (p != want || r["deleted"] != false) {
			continue
		}
		n++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", str(r["pid"]), textOf(r, "name"), accessCell(r["access"]), str(r["handle_count"]), deletedCell(r["deleted"]), textCell(p), str(r["process_ref"]))
	}
	tw.Flush()
	return n
}

// accessCell renders a row's access letters in psmisc fuser -v's ACCESS
// form: five columns f/F, r, c, e, m, each '.' when that use is absent
// ("F.c.m"); "-" when the row carries no access field.
func accessCell(v any) string {
	a, ok := v.(string)
	if !ok {
		return "-"
	}
	b := []byte(".....")
	for i := 0; i < len(a); i++ {
		switch c := a[i]; c {
		case 'f', 'F':
			b[0] = c
		case 'r':
			b[1] = c
		case 'c':
			b[2] = c
		case 'e':
			b[3] = c
		case 'm':
			b[4] = c
		}
	}
	return string(b)
}
