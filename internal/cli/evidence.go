package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/spf13/cobra"
)

func init() { register(newEvidenceCmd) }

func newEvidenceCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "evidence",
		Short: "Query, show and locate preserved evidence, and sweep unreferenced objects (query|show|location|sweep)",
		Long: `The local evidence store lives at $INQUEST_DATA_DIR, else
$XDG_DATA_HOME/inquest/evidence, else ~/.local/share/inquest/evidence.`,
	}
	cmd.AddCommand(newEvidenceQueryCmd(env), newEvidenceShowCmd(env), newEvidenceLocationCmd(env), newEvidenceSweepCmd(env))
	cmd.PersistentFlags().Bool("json", false, "print the result envelope as JSON (on failure the error envelope); without it a table or labelled lines")
	return cmd
}

func newEvidenceQueryCmd(env *Env) *cobra.Command {
	var from, to, op, format, toolset, cursor string
	var pageSize int
	cmd := &cobra.Command{
		Use:   "query",
		Short: "List evidence manifests newest first (the query_evidence tool)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			args := map[string]any{}
			// --from and --to resolved to RFC 3339 (the flags keep what
			// was typed, for the error lines)
			now := time.Now()
			var fromAt, toAt string
			for _, w := range []struct {
				flag, typed string
				v           *string
			}{{"--from", from, &fromAt}, {"--to", to, &toAt}} {
				if w.typed == "" {
					continue
				}
				t, err := parseWhen(w.flag, w.typed, now)
				if err != nil {
					return printEnvelope(env, nil, err)
				}
				*w.v = t
			}
			if fromAt != "" && toAt != "" {
				f, _ := time.Parse(time.RFC3339Nano, fromAt)
				t, _ := time.Parse(time.RFC3339Nano, toAt)
				if t.Before(f) {
					return badFlag("--to", "--to %s is before --from %s (%s is before %s); give the earlier time as --from", to, from, toAt, fromAt)
				}
			}
			for k, v := range map[string]string{"created_from": fromAt, "created_to": toAt, "operation": op, "format": format, "toolset": toolset, "cursor": cursor} {
				if v != "" {
					args[k] = v
				}
			}
			// An explicit --page-size always reaches the tool, whose schema
			// rejects values outside 1-200 (INVALID_ARGUMENT).
			if cmd.Flags().Changed("page-size") {
				args["page_size"] = pageSize
			}
			raw, _ := json.Marshal(args)
			rt, err := newRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr, NoHost: true})
			if err != nil {
				return err
			}
			defer rt.Close()
			res, err := rt.Registry.Call(cmd.Context(), "query_evidence", raw)
			if res != nil && res.NextAction != nil {
				argv := []string{"inquest", "evidence", "query"}
				flags := []struct{ key, flag string }{{"created_from", "--from"}, {"created_to", "--to"}, {"operation", "--operation"}, {"format", "--format"}, {"toolset", "--toolset"}}
				for _, f := range flags {
					if v, ok := res.NextAction.Arguments[f.key].(string); ok {
						argv = append(argv, f.flag, v)
					}
				}
				argv = append(argv, "--page-size", jsonString(res.NextAction.Arguments["page_size"]), "--cursor", res.NextAction.Arguments["cursor"].(string))
				if data, ok := res.Data.(map[string]any); ok {
					data["next_page"] = map[string]any{"tool": res.NextAction.Tool, "arguments": res.NextAction.Arguments, "argv": argv}
				}
			}
			if err != nil {
				return printEnvelope(env, res, err)
			}
			if !jsonMode(cmd, nil) && res.NextAction != nil {
				// The text tells the next page as the command to run
				// (renderEvidenceQuery), not as the tool's next_action.
				kept := res.Warnings[:0]
				for _, w := range res.Warnings {
					if !strings.Contains(w, "next_action") {
						kept = append(kept, w)
					}
				}
				res.Warnings = kept
			}
			return printEvidence(cmd, env, res, renderEvidenceQuery(env.Stderr))
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "created at or after: RFC 3339, local \"YYYY-MM-DD HH:MM\" or how long ago (2h)")
	f.StringVar(&to, "to", "", "created at or before, in the forms --from takes")
	f.StringVar(&op, "operation", "", "only this operation")
	f.StringVar(&format, "format", "", "only records with an artifact of this format")
	f.StringVar(&toolset, "toolset", "", "only records this toolset preserved ("+strings.Join(evidence.Toolsets, ", ")+")")
	f.StringVar(&cursor, "cursor", "", "the previous page's data.next_cursor (repeat the same filters); without --json the next command is printed whole")
	f.IntVar(&pageSize, "page-size", 0, "manifests per page, 1-200 (default 50)")
	return cmd
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func newEvidenceShowCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "show EVIDENCE_ID",
		Short: "Print one record's full manifest, provenance included (argv, environment, cwd, host paths)",
		Long: `show is the explicit local full-provenance view; the MCP tool
inspect_evidence returns the redacted projection.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := evidence.OpenDefault()
			if err != nil {
				return printEnvelope(env, nil, err)
			}
			defer st.Close()
			m, err := st.Get(args[0])
			if err != nil {
				// the argument it rejects, as inspect_evidence names it
				if ce := asContractError(err); ce != nil && ce.Code == contract.CodeInvalidArgument && ce.Field == "" {
					ce.Field = "/evidence_id"
				}
				return printEnvelope(env, nil, err)
			}
			// The same check as inspect_evidence: every artifact's SHA-256.
			for _, a := range m.Artifacts {
				if err := st.VerifyArtifact(cmd.Context(), m, a.Name); err != nil {
					return printEnvelope(env, nil, err)
				}
			}
			objects := map[string]string{}
			for _, a := range m.Artifacts {
				if p, _, err := st.ArtifactPath(m, a.Name); err == nil {
					objects[a.Name] = p
				}
			}
			res := contract.NewResult("evidence", m.CreatedAt, map[string]any{"manifest": m, "object_paths": objects})
			return printEvidence(cmd, env, res, renderEvidenceShow)
		},
	}
}

// storeAbsent reports whether no evidence store exists at dir yet (dir or
// its manifests directory missing). A dir that is not a directory, or
// that cannot be examined, is an error naming it, never "absent".
func storeAbsent(dir string) (bool, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case err != nil:
		return false, evidence.IOFailure(dir, err, "the evidence directory cannot be examined")
	case !fi.IsDir():
		return false, contract.Errorf(contract.CodeInvalidArgument, "the evidence store path %s is not a directory (set INQUEST_DATA_DIR to a directory)", dir).WithDetail("path", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "manifests")); errors.Is(err, fs.ErrNotExist) {
		return true, nil
	} else if err != nil {
		return false, evidence.IOFailure(dir, err, "the evidence directory cannot be examined")
	}
	return false, nil
}

func newEvidenceLocationCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "location",
		Short: "Print where the evidence store is and how many records it holds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := evidence.DefaultDir()
			if err != nil {
				return printEnvelope(env, nil, err)
			}
			if absent, err := storeAbsent(dir); err != nil {
				return printEnvelope(env, nil, err)
			} else if absent {
				res := contract.NewResult("evidence", contractNow(), map[string]any{"dir": dir, "exists": false, "records": 0, "unreadable_manifests": 0})
				return printEvidence(cmd, env, res, renderEvidenceLocation)
			}
			st, err := evidence.Open(dir)
			if err != nil {
				return printEnvelope(env, nil, err)
			}
			defer st.Close()
			loc, err := st.Location(cmd.Context())
			if err != nil {
				return printEnvelope(env, nil, err)
			}
			res := contract.NewResult("evidence", contractNow(), map[string]any{"dir": loc.Dir, "exists": true, "index": loc.Index, "source": loc.Source, "records": loc.Records, "unreadable_manifests": loc.Unreadable, "snapshot": contract.Int(loc.Snapshot), "format_version": loc.FormatVer, "unreferenced_objects": nil, "unreferenced_bytes": nil})
			if loc.UnreferencedObjects != nil {
				res.Data.(map[string]any)["unreferenced_objects"] = *loc.UnreferencedObjects
				res.Data.(map[string]any)["unreferenced_bytes"] = *loc.UnreferencedBytes
				if *loc.UnreferencedObjects > 0 {
					res.Warn(fmt.Sprintf("%d object files (%s) are referenced by no record (left by a preserve that was killed or failed, or of one in progress); inquest evidence sweep removes those older than %s", *loc.UnreferencedObjects, humanBytes(strconv.FormatInt(*loc.UnreferencedBytes, 10)), evidence.DefaultSweepGrace))
				}
			}
			if loc.Unreadable > 0 {
				res.Warn(fmt.Sprintf("%d of %d records have a manifest that is missing, cannot be read or verified, or references a missing object; query_evidence lists them with a problem and show answers REPOSITORY_CORRUPT", loc.Unreadable, loc.Records))
			}
			return printEvidence(cmd, env, res, renderEvidenceLocation)
		},
	}
}

func newEvidenceSweepCmd(env *Env) *cobra.Command {
	var olderThan time.Duration
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Remove object files no evidence record references (left by killed or failed preserves)",
		Long: `sweep waits until no preserve is between writing an object and publishing
its record, then removes every object file that no manifest references and
that is older than --older-than, and reports how many it removed and their
bytes. Objects of preserves in progress, and every object a record
references, are never removed. Nothing is removed while a manifest cannot
be read (inquest evidence query lists it with its problem).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan < 0 {
				return printEnvelope(env, nil, contract.Errorf(contract.CodeInvalidArgument, "--older-than must not be negative (got %s)", olderThan).WithDetail("field", "--older-than"))
			}
			dir, err := evidence.DefaultDir()
			if err != nil {
				return printEnvelope(env, nil, err)
			}
			if absent, err := storeAbsent(dir); err != nil {
				return printEnvelope(env, nil, err)
			} else if absent {
				res := contract.NewResult("evidence", contractNow(), map[string]any{"dir": dir, "exists": false, "removed_objects": 0, "removed_bytes": 0})
				return printEvidence(cmd, env, res, renderEvidenceSweep)
			}
			st, err := evidence.Open(dir)
			if err != nil {
				return printEnvelope(env, nil, err)
			}
			defer st.Close()
			rep, err := st.SweepObjects(cmd.Context(), olderThan, dryRun)
			if err != nil {
				return printEnvelope(env, nil, err)
			}
			res := contract.NewResult("evidence", contractNow(), map[string]any{
				"dir": st.Dir(), "exists": true, "objects": rep.Objects, "referenced_objects": rep.Referenced,
				"removed_objects": rep.Removed, "removed_bytes": rep.RemovedBytes,
				"recent_unreferenced_objects": rep.Recent, "recent_unreferenced_bytes": rep.RecentBytes,
				"unreadable_manifests": rep.UnreadableManifests, "older_than_seconds": rep.GraceSeconds, "dry_run": rep.DryRun,
			})
			if rep.Reason != "" {
				res.Warn(rep.Reason)
			}
			if dryRun && rep.Removed > 0 {
				res.Warn(fmt.Sprintf("dry run: %d objects (%s) would be removed", rep.Removed, humanBytes(strconv.FormatInt(rep.RemovedBytes, 10))))
			}
			return printEvidence(cmd, env, res, renderEvidenceSweep)
		},
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", evidence.DefaultSweepGrace, "keep unreferenced objects modified more recently than this (e.g. 1h, 0 for none)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be removed, remove nothing")
	return cmd
}

func contractNow() time.Time { return time.Now() }
