package perf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ParseCeilings reads the server ceilings of `inquest mcp --limits JSON`:
// a JSON object with any of max_rows, max_input_bytes (bytes),
// timeout_seconds and max_memory_bytes (bytes), the same keys a tool's
// limits argument takes. Each given key replaces that built-in ceiling
// (DefaultCeilings) and may only lower it: the built-in values are the
// hard maxima. The default page size and default memory bound shrink with
// their ceilings. Unknown keys, non-integers, values below 1 and values
// above the built-in maximum are errors naming the key.
func ParseCeilings(raw string) (Ceilings, error) {
	c := DefaultCeilings
	dec := json.NewDecoder(strings.NewReader(raw))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil || m == nil {
		return c, fmt.Errorf("want a JSON object of integers such as {\"max_rows\":500,\"timeout_seconds\":60}")
	}
	if dec.More() {
		return c, fmt.Errorf("want one JSON object; found more after it")
	}
	get := func(key string, max int64) (int64, bool, error) {
		n, ok := m[key]
		if !ok {
			return 0, false, nil
		}
		delete(m, key)
		var v integer
		if err := v.UnmarshalJSON(bytes.TrimSpace(n)); err != nil {
			return 0, true, fmt.Errorf("%s: %v (want an integer)", key, err)
		}
		if v < 1 || int64(v) > max {
			return 0, true, fmt.Errorf("%s %d is out of range: give 1 to %d (the built-in ceiling, which --limits may only lower)", key, int64(v), max)
		}
		return int64(v), true, nil
	}
	if v, ok, err := get("max_rows", int64(c.MaxRows)); err != nil {
		return c, err
	} else if ok {
		c.MaxRows = int(v)
		c.DefaultRows = min(c.DefaultRows, c.MaxRows)
	}
	if v, ok, err := get("max_input_bytes", c.MaxInputBytes); err != nil {
		return c, err
	} else if ok {
		c.MaxInputBytes = v
	}
	if v, ok, err := get("timeout_seconds", int64(c.TimeoutSeconds)); err != nil {
		return c, err
	} else if ok {
		c.TimeoutSeconds = int(v)
	}
	if v, ok, err := get("max_memory_bytes", c.MaxMemoryBytes); err != nil {
		return c, err
	} else if ok {
		c.MaxMemoryBytes = v
		c.DefaultMemoryBytes = min(c.DefaultMemoryBytes, v)
	}
	for k := range m {
		return c, fmt.Errorf("unknown key %q: want max_rows, max_input_bytes, timeout_seconds or max_memory_bytes", k)
	}
	return c, nil
}

// Status is the ceilings as get_status data.analysis_limits shows them:
// the four ceilings (bytes, seconds, rows) plus the defaults a request
// gets when it gives no limits (default_rows, default_memory_bytes), and
// source: "--limits" when set at start-up, else "built-in".
func (c Ceilings) Status() map[string]any {
	source := "built-in"
	if c != DefaultCeilings {
		source = "--limits"
	}
	return map[string]any{
		"max_rows":             c.MaxRows,
		"default_rows":         c.DefaultRows,
		"max_input_bytes":      c.MaxInputBytes,
		"timeout_seconds":      c.TimeoutSeconds,
		"max_memory_bytes":     c.MaxMemoryBytes,
		"default_memory_bytes": c.defaultMemory(),
		"source":               source,
	}
}

// Ceilings returns the runtime's server ceilings.
func (rt *Runtime) Ceilings() Ceilings { return rt.cfg.Ceilings }
