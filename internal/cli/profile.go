package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newProfileCmd) }

type profileRow struct {
	ID       string   `json:"profile_id"`
	Name     string   `json:"name"`
	Revision string   `json:"revision"`
	Tracking []string `json:"tracking"`
}

// findProfile resolves a profile id or (case-insensitive) name through
// list_profiles and returns its id and revision.
func findProfile(cmd *cobra.Command, reg *tool.Registry, key string) (profileRow, error) {
	res, err := reg.Call(cmd.Context(), "list_profiles", json.RawMessage("{}"))
	if err != nil {
		return profileRow{}, err
	}
	var d struct {
		Profiles []profileRow `json:"profiles"`
	}
	if err := remarshal(res.Data, &d); err != nil {
		return profileRow{}, err
	}
	for _, p := range d.Profiles {
		if p.ID == key || strings.EqualFold(p.Name, key) {
			return p, nil
		}
	}
	return profileRow{}, contract.Errorf(contract.CodeReferenceInvalid, "no saved profile has this id or name; see inquest profile list")
}

func newProfileCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "Investigation Profiles (list_profiles, update_profile)",
		Long: `Saved Investigation Profiles: named tracking lists in inquest.toml. PROFILE is
a profile id or name. delete always, and load over unsaved changes or with
history loss, wait for a local confirmation (inquest confirm).

` + confirmHelp,
	}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "Saved profiles and the active binding (list_profiles)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return showTool(cmd, env, asJSON, "list_profiles", func(res *contract.Result) error {
				var d struct {
					Revision string       `json:"revision"`
					Active   *string      `json:"active_profile_id"`
					Unsaved  bool         `json:"unsaved_changes"`
					Profiles []profileRow `json:"profiles"`
				}
				if err := remarshal(res.Data, &d); err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "revision %s, unsaved working changes: %v\n", cell(d.Revision), d.Unsaved)
				tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ACTIVE\tID\tNAME\tREVISION\tTRACKING")
				for _, p := range d.Profiles {
					mark := ""
					if d.Active != nil && *d.Active == p.ID {
						mark = "*"
					}
					tracking := make([]string, len(p.Tracking))
					for i, n := range p.Tracking {
						tracking[i] = cell(n)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", mark, cell(p.ID), cell(p.Name), cell(p.Revision), strings.Join(tracking, ","))
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print the list_profiles envelope")
	cmd.AddCommand(list,
		profileChange(env, "save-as", "save_as", "NAME", "Save the working tracking list as a new profile and bind it"),
		profileChange(env, "save", "save", "PROFILE", "Save the working tracking list into the active profile"),
		profileChange(env, "load", "load", "PROFILE", "Load a profile's names as the working tracking list"),
		profileChange(env, "rename", "rename", "PROFILE NEW_NAME", "Rename a profile"),
		profileChange(env, "delete", "delete", "PROFILE", "Delete a profile (always confirmed locally)"),
	)
	return cmd
}

func profileChange(env *Env, use, action, argsUse, short string) *cobra.Command {
	var m mutationFlags
	var rev string
	n := len(strings.Fields(argsUse))
	c := &cobra.Command{
		Use:   use + " " + argsUse,
		Short: short + " (update_profile action " + action + ")",
		Long:  short + " (update_profile action " + action + ").\n\n" + confirmHelp,
		Args:  cobra.ExactArgs(n),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMutation(cmd, env, &m, "update_profile", func(reg *tool.Registry) (map[string]any, error) {
				a := map[string]any{"action": action}
				if action == "save_as" {
					a["name"] = args[0]
					return a, nil
				}
				p, err := findProfile(cmd, reg, args[0])
				if err != nil {
					return nil, err
				}
				a["profile_id"] = p.ID
				a["profile_revision"] = p.Revision
				if rev != "" {
					a["profile_revision"] = rev
				}
				if action == "rename" {
					a["name"] = args[1]
				}
				return a, nil
			})
		},
	}
	if action != "save_as" {
		c.Flags().StringVar(&rev, "profile-revision", "", "profile_revision (default: the current one from list_profiles)")
	}
	m.add(c)
	return c
}
