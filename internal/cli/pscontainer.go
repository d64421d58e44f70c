package cli

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/inquest-dev/inquest/internal/sample"
)

// psContainerRuntimes are the runtimes `inquest ps --container` takes
// (list_processes filter.container.runtime); "any" is every container.
var psContainerRuntimes = []string{"any", sample.RuntimeDocker, sample.RuntimePodman, sample.RuntimeContainerd, sample.RuntimeCRIO,
	sample.RuntimeKubernetes, sample.RuntimeNspawn, sample.RuntimeLXC, sample.RuntimeNone, sample.RuntimeUnknown}

// parseContainerFlag reads --container: a runtime ("docker", "any"),
// runtime:id ("podman:2d20f4ff975e"), or an id prefix alone (at least 4
// characters, or a pod UID or container name), as list_processes'
// filter.container object; an unknown runtime or a short id is an error
// naming the flag. The value goes to the host as it was given.
func parseContainerFlag(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", badFlag("--container", "--container needs a runtime (%s), runtime:ID, or a container id prefix", strings.Join(psContainerRuntimes, ", "))
	}
	rt, id, hasID := strings.Cut(v, ":")
	if !hasID {
		if slices.Contains(psContainerRuntimes, strings.ToLower(v)) {
			return strings.ToLower(v), nil
		}
		rt, id = "", v
	}
	if rt != "" {
		rt = strings.ToLower(rt)
		if !slices.Contains(psContainerRuntimes, rt) {
			return "", badFlag("--container", "--container %q: unknown runtime %q; use %s", v, rt, strings.Join(psContainerRuntimes, ", "))
		}
	}
	if len(id) < 4 || len(id) > 128 {
		return "", badFlag("--container", "--container %q: a container id is a prefix of at least 4 characters (docker ps and podman ps show 12), a pod UID or a container name", v)
	}
	if rt != "" {
		return rt + ":" + id, nil
	}
	return id, nil
}

// withContainerFilter adds filter.container (and, for the table, the
// container projection) to list_processes arguments raw.
func withContainerFilter(raw json.RawMessage, container string, project bool) json.RawMessage {
	if container == "" && !project {
		return raw
	}
	var args map[string]any
	if json.Unmarshal(raw, &args) != nil {
		return raw
	}
	if container != "" {
		f, _ := args["filter"].(map[string]any)
		if f == nil {
			f = map[string]any{}
		}
		f["container"] = container
		args["filter"] = f
	}
	if p, ok := args["projection"].([]any); ok && project {
		args["projection"] = append(p, "container")
	}
	b, _ := json.Marshal(args)
	return b
}

// containerCell is a row's CONTAINER cell: runtime:shortid for a
// container ("kubernetes:<id>" under a pod), "-" for a host process, "?"
// when the cgroup path fits no rule or was not read.
func containerCell(r map[string]any) string {
	c, ok := r["container"].(map[string]any)
	if !ok {
		return "?"
	}
	rt, _ := c["runtime"].(string)
	switch rt {
	case sample.RuntimeNone:
		return "-"
	case "", sample.RuntimeUnknown:
		return "?"
	}
	id, _ := c["id"].(string)
	return rt + ":" + sample.Container{ID: id}.ShortID()
}

// inAnyContainer reports whether a row of rows is in a container.
func inAnyContainer(rows []map[string]any) bool {
	for _, r := range rows {
		if c := containerCell(r); c != "-" && c != "?" {
			return true
		}
	}
	return false
}
