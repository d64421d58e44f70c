package host

import (
	"context"
	"slices"
	"strconv"

	"github.com/inquest-dev/inquest/internal/config"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// profileJSON renders a saved profile; its revision is a decimal string
// (profile revisions persist in inquest.toml across host restarts).
func profileJSON(p config.Profile) map[string]any {
	return map[string]any{"profile_id": p.ID, "name": p.Name, "revision": strconv.FormatUint(p.Revision, 10), "tracking": normalizeNames(p.Tracking)}
}

// loadProfiles reads the saved profiles, giving ids to entries written
// without one (the id is derived from the position and name, stable until
// the next write stores real ids).
func loadProfiles() ([]config.Profile, error) {
	f, err := config.Load()
	if err != nil {
		return nil, contract.Errorf(contract.CodeExecutionFailed, "inquest.toml could not be read")
	}
	return withIDs(f.Profiles), nil
}

func withIDs(ps []config.Profile) []config.Profile {
	out := slices.Clone(ps)
	for i := range out {
		if out[i].ID == "" {
			out[i].ID = "prof_legacy_" + strconv.Itoa(i) + "_" + out[i].Name
		}
	}
	return out
}

var listProfilesTool = define(tool.Tool{
	Name:        "list_profiles",
	Title:       "Investigation profiles",
	Description: "Saved investigation profiles (named tracking lists kept in inquest.toml; not pprof profiles, which summarize_profile reads), the active one, unsaved working changes and the investigation revision. No arguments.",
	Input:       schema(noArgs),
	Annotations: readOnly,
}, func(ctx context.Context, h *Host, s *Session, _ noArgsStruct) (*contract.Result, error) {
	return investigationOf(h).listProfiles()
})

func (inv *investigation) listProfiles() (*contract.Result, error) {
	ps, err := loadProfiles()
	if err != nil {
		return nil, err
	}
	inv.mu.Lock()
	rev, active, working := inv.revisionLocked(), inv.active, slices.Clone(inv.tracking)
	inv.mu.Unlock()
	rows := []any{}
	unsaved := len(working) > 0
	for _, p := range ps {
		rows = append(rows, profileJSON(p))
		if p.ID == active {
			unsaved = !sameNames(p.Tracking, working)
		}
	}
	data := map[string]any{"revision": rev, "active_profile_id": nilIfEmpty(active), "working_tracking": working, "unsaved_changes": unsaved, "profiles": rows}
	return contract.NewResult("live", inv.h.sampler.Latest().Time, data), nil
}

// updateProfileArgs are update_profile's arguments.
type updateProfileArgs struct {
	operationArgs
	Action          string `json:"action"`
	ProfileID       string `json:"profile_id"`
	ProfileRevision string `json:"profile_revision"`
	Name            string `json:"name"`
	WaitMS          *int   `json:"wait_ms"`
}

func updateProfileTool(d Delivery) Decl {
	t := define(tool.Tool{
		Name:        "update_profile",
		Title:       "Change investigation profiles",
		Description: "One operation on saved investigation profiles (named tracking lists, not pprof data): load, save, save_as, rename or delete (delete discards the saved list only). Required: operation_id, expected_revision, action (plus profile_id and profile_revision, or name, as the action needs); delete and lossy loads wait for a local user.",
		Input: schema(`{"type":"object","additionalProperties":false,"required":["operation_id","expected_revision","action"],"properties":{` + operationFields + `,
"action":{"type":"string","enum":["load","save","save_as","rename","delete"]},
"profile_id":{"type":"string","minLength":1,"maxLength":128},
"profile_revision":{"type":"string","minLength":1,"maxLength":32},
"name":{"type":"string","minLength":1,"maxLength":128,"description":"new profile name (save_as, rename)"},
` + waitField(d.waitDefault()) + `}}`),
		Annotations: tool.Annotations{Destructive: true, Idempotent: true},
	}, func(ctx context.Context, h *Host, s *Session, a updateProfileArgs) (*contract.Result, error) {
		return investigationOf(h).updateProfile(ctx, s, a)
	})
	t.Delivery = DeliverOperation
	return t
}

// processChoice is the INVALID_ARGUMENT of a call that names no process
// where it needs one: field is the object lacking the choice ("" for the
// top level), expected.one_of_required lists both alternatives
// ([["process_ref"],["pid"]], as the schema validator does for a missing
// choice) and the message names both after what.
func processChoice(field, what string) *contract.Error {
	e := contract.Errorf(contract.CodeInvalidArgument, "%s requires process_ref (from list_processes) or pid (a live process)", what)
	e.Field = field
	e.Expected = map[string]any{"one_of_required": [][]string{{"process_ref"}, {"pid"}}}
	return e
}

func argErr(field, msg string) error {
	e := contract.Errorf(contract.CodeInvalidArgument, "%s", msg)
	e.Field = "/" + field
	return e
}

func (inv *investigation) updateProfile(ctx context.Context, s *Session, a updateProfileArgs) (*contract.Result, error) {
	raw := rawArgs(ctx)
	switch a.Action {
	case "save_as":
		if a.Name == "" {
			return nil, argErr("name", "save_as requires name (a new profile name)")
		}
		if a.ProfileID != "" || a.ProfileRevision != "" {
			return nil, argErr("profile_id", "save_as takes name only, not profile_id/profile_revision")
		}
	case "rename":
		if a.Name == "" {
			return nil, argErr("name", "rename requires name (the new name)")
		}
		fallthrough
	default:
		if a.ProfileID == "" {
			return nil, argErr("profile_id", a.Action+" requires profile_id and profile_revision from list_profiles")
		}
		if a.ProfileRevision == "" {
			return nil, argErr("profile_revision", a.Action+" requires profile_revision from list_profiles")
		}
		if a.Action != "rename" && a.Name != "" {
			return nil, argErr("name", a.Action+" does not take name")
		}
	}
	op, reply, err, done := inv.begin(ctx, s, "update_profile", a.OperationID, raw)
	if done {
		return reply, err
	}
	op.SetRunning()
	inv.mu.Lock()
	fail := func(err error) (*contract.Result, error) {
		inv.mu.Unlock()
		op.Finish(nil, err)
		return inv.operationReply(op.Status())
	}
	if err := inv.checkRevisionLocked(a.ExpectedRevision); err != nil {
		return fail(err)
	}
	if a.Action == "load" || a.Action == "save" || a.Action == "save_as" {
		if err := recordingConflict(inv.h); err != nil {
			return fail(err)
		}
	}
	ps, err := loadProfiles()
	if err != nil {
		return fail(err)
	}
	// check finds the selected profile at its reported revision.
	check := func(ps []config.Profile) (int, error) {
		i := slices.IndexFunc(ps, func(p config.Profile) bool { return p.ID == a.ProfileID })
		if i < 0 {
			return -1, contract.Errorf(contract.CodeReferenceInvalid, "no saved profile has this profile_id; call list_profiles").WithDetail("profile_id", a.ProfileID)
		}
		if strconv.FormatUint(ps[i].Revision, 10) != a.ProfileRevision {
			e := contract.Errorf(contract.CodeStateConflict, "profile_revision is stale; call list_profiles").WithDetail("current_profile_revision", strconv.FormatUint(ps[i].Revision, 10))
			e.Field = "/profile_revision"
			return -1, e
		}
		return i, nil
	}
	nameTaken := func(ps []config.Profile, name, except string) bool {
		return slices.ContainsFunc(ps, func(p config.Profile) bool { return p.ID != except && lowerEq(p.Name, name) })
	}
	expected := a.ExpectedRevision
	var idx int
	if a.Action != "save_as" {
		if idx, err = check(ps); err != nil {
			return fail(err)
		}
	}
	// edit rewrites the profiles list inside the atomic config update,
	// re-checking against the file as it is at write time.
	var outcome map[string]any
	var nextTracking []string
	nextActive := inv.active
	var edit func(f *config.File) error
	switch a.Action {
	case "save_as":
		if nameTaken(ps, a.Name, "") {
			return fail(contract.Errorf(contract.CodeStateConflict, "a profile with this name already exists; choose another name or save that profile"))
		}
		p := config.Profile{ID: newID(), Name: a.Name, Revision: 1, Tracking: slices.Clone(inv.tracking)}
		nextTracking, nextActive = inv.tracking, p.ID
		edit = func(f *config.File) error {
			f.Profiles = withIDs(f.Profiles)
			if nameTaken(f.Profiles, a.Name, "") {
				return contract.Errorf(contract.CodeStateConflict, "a profile with this name already exists")
			}
			f.Profiles = append(f.Profiles, p)
			return nil
		}
		outcome = map[string]any{"action": "save_as", "profile": profileJSON(p)}
	case "save":
		if ps[idx].ID != inv.active {
			return fail(contract.Errorf(contract.CodeStateConflict, "save applies only to the active profile; use save_as for a new one or load this one first"))
		}
		p := ps[idx]
		p.Tracking, p.Revision = slices.Clone(inv.tracking), p.Revision+1
		nextTracking = inv.tracking
		edit = inv.replaceProfile(p, check)
		outcome = map[string]any{"action": "save", "profile": profileJSON(p)}
	case "rename":
		if nameTaken(ps, a.Name, a.ProfileID) {
			return fail(contract.Errorf(contract.CodeStateConflict, "a profile with this name already exists"))
		}
		p := ps[idx]
		p.Name, p.Revision = a.Name, p.Revision+1
		nextTracking = inv.tracking
		edit = func(f *config.File) error {
			f.Profiles = withIDs(f.Profiles)
			if nameTaken(f.Profiles, a.Name, a.ProfileID) {
				return contract.Errorf(contract.CodeStateConflict, "a profile with this name already exists")
			}
			return inv.replaceProfile(p, check)(f)
		}
		outcome = map[string]any{"action": "rename", "profile": profileJSON(p)}
	case "delete":
		p := ps[idx]
		nextTracking = inv.tracking
		if inv.active == p.ID {
			nextActive = ""
		}
		edit = func(f *config.File) error {
			f.Profiles = withIDs(f.Profiles)
			i, err := check(f.Profiles)
			if err != nil {
				return err
			}
			f.Profiles = slices.Delete(f.Profiles, i, i+1)
			return nil
		}
		outcome = map[string]any{"action": "delete", "deleted_profile": profileJSON(p)}
	case "load":
		p := ps[idx]
		nextTracking, nextActive = normalizeNames(p.Tracking), p.ID
		outcome = map[string]any{"action": "load", "profile": profileJSON(p), "names": nextTracking, "scope": trackingScope}
	}
	apply := func() (map[string]any, error) {
		if a.Action == "load" || a.Action == "save" || a.Action == "save_as" {
			// A recording may have started while a confirmation was pending.
			if err := recordingConflict(inv.h); err != nil {
				return nil, err
			}
		}
		if _, err := inv.persistLocked(nextTracking, nextActive, edit); err != nil {
			return nil, err
		}
		outcome["revision"] = inv.revisionLocked()
		outcome["active_profile_id"] = nilIfEmpty(inv.active)
		return outcome, nil
	}
	// Confirmation (docs/tui.md, "Confirmations"): delete always; load when it
	// would discard retained history or replace different unsaved working
	// tracking state.
	var confirm map[string]any
	switch a.Action {
	case "delete":
		confirm = map[string]any{"tool": "update_profile", "action": "delete", "profile": profileJSON(ps[idx]), "effect": "the saved profile is deleted from inquest.toml"}
	case "load":
		loss := inv.store.PreviewTracking(nextTracking)
		unsaved := len(inv.tracking) > 0
		for _, p := range ps {
			if p.ID == inv.active {
				unsaved = !sameNames(p.Tracking, inv.tracking)
			}
		}
		replacesUnsaved := unsaved && !sameNames(inv.tracking, nextTracking)
		if len(loss) > 0 || replacesUnsaved {
			confirm = map[string]any{"tool": "update_profile", "action": "load", "profile": profileJSON(ps[idx]),
				"replaces_unsaved_tracking": replacesUnsaved, "current_tracking": slices.Clone(inv.tracking), "discard": lossJSON(inv.h, loss)}
		}
	}
	recheck := func() error {
		ps, err := loadProfiles()
		if err != nil {
			return err
		}
		if a.Action != "save_as" {
			_, err = check(ps)
		}
		return err
	}
	return inv.settle(s, op, expected, confirm, recheck, apply)
}

// replaceProfile returns an edit that replaces the profile with p.ID after
// re-checking its revision in the file being written.
func (inv *investigation) replaceProfile(p config.Profile, check func([]config.Profile) (int, error)) func(f *config.File) error {
	return func(f *config.File) error {
		f.Profiles = withIDs(f.Profiles)
		i, err := check(f.Profiles)
		if err != nil {
			return err
		}
		f.Profiles[i] = p
		return nil
	}
}
