package tool

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/contract"
)

// MaxArgumentBytes bounds the encoded arguments of one call (the 4 MiB MCP
// message limit). Larger arguments are INVALID_ARGUMENT with
// details.limit "max_argument_bytes" and details.limit_bytes.
const MaxArgumentBytes = 4 << 20

// validate decides with the JSON Schema library (github.com/google/jsonschema-go,
// the MCP SDK's own validator, which does no work at package
// initialisation) and, only for rejected arguments, locates the failure in
// the schema and the arguments to project it.
func (e *entry) validate(args json.RawMessage) (err error) {
	if len(args) > MaxArgumentBytes {
		// The caller's request, not a result, is too large: like a
		// protocol line over its limit it is INVALID_ARGUMENT (not
		// retryable), with the bound in details.
		return contract.Errorf(contract.CodeInvalidArgument, "the arguments are %d bytes, over the %d MiB limit of one call's arguments; pass less inline (a file path instead of its content, fewer items)", len(args), MaxArgumentBytes>>20).
			WithDetail("limit", "max_argument_bytes").WithDetail("limit_bytes", MaxArgumentBytes)
	}
	if err := e.compiled(); err != nil {
		return &contract.Error{Code: contract.CodeInternalError, Message: "the tool's input schema does not compile: " + err.Error()}
	}
	var inst any
	if json.Unmarshal(args, &inst) != nil {
		return &contract.Error{Code: contract.CodeInvalidArgument, Message: "arguments are not valid JSON", NextAction: nil}
	}
	defer func() {
		if recover() != nil {
			err = &contract.Error{Code: contract.CodeInvalidArgument, Message: "arguments do not match the input schema"}
		}
	}()
	if e.schema.Validate(inst) == nil {
		return nil
	}
	e.explainer()
	l := locator{root: e.doc, patterns: e.patterns}
	fails := l.check(e.doc, "", inst, nil)
	if err := e.severalAlternatives(&l, fails, inst); err != nil {
		return err
	}
	if f := l.leaf(fails); f != nil {
		if alt := requiredAlternatives(fails, inst); alt != nil && f.keyword == "required" && containsString(alt.names(), f.missing) {
			return e.alternatives(alt)
		}
		if f.keyword == "required" {
			// A misplaced member beside the missing one is named first
			// (where it belongs), with the missing member: one
			// correction fixes both.
			if m := e.misplaced(fails, f.instance); m != nil {
				pe := e.project(m)
				pe.Message += "; " + f.missing + " is required too"
				return pe
			}
		}
		if f.keyword == "required" || f.keyword == "additionalProperties" {
			// A member no schema at that place accepts ({"bogus":1}
			// where a target is {process_ref}, {pid} or {system}) is
			// named, with every member accepted there, rather than
			// the first alternative's missing member.
			if pe := e.unknownMember(fails, f); pe != nil {
				return pe
			}
		}
		return e.project(f)
	}
	return &contract.Error{Code: contract.CodeInvalidArgument, Message: "arguments do not match the input schema"}
}

// explainer decodes the schema document and compiles its patterns once,
// on the first rejection (a valid call never needs them). The library
// already accepted both, so errors here leave the locator without them.
func (e *entry) explainer() {
	e.docOnce.Do(func() {
		if json.Unmarshal(e.in(), &e.doc) == nil {
			e.patterns, _ = compilePatterns(e.doc)
		}
	})
}

// failure is one keyword that rejected one value: where in the arguments
// (instance), where in the schema (the schema object holding keyword), and
// for groups (oneOf, anyOf) the failures of each branch.
type failure struct {
	instance []string
	schema   string
	keyword  string
	missing  string   // required: the first missing property
	required []string // required: every name the keyword lists
	extra    []string // additionalProperties: the names not accepted
	causes   []*failure
}

// locator walks a decoded schema beside the decoded arguments and returns
// every failing keyword, the way the library's rejection is explained. It
// covers the keywords inquest's schemas use (type, enum, const, numeric and
// length bounds, pattern, items, properties, patternProperties,
// additionalProperties, required, dependentRequired, min/maxProperties,
// uniqueItems, allOf/anyOf/oneOf/not, if/then/else, local $ref); format is
// an annotation, as in the library.
type locator struct {
	root     any
	patterns map[string]*regexp.Regexp
}

// leaf picks the most specific cause: the deepest instance location, then
// the first in schema order; groups are replaced by their branches.
func (l *locator) leaf(fs []*failure) *failure {
	var best *failure
	walkFailures(fs, func(f *failure) bool {
		if len(f.causes) == 0 && (best == nil || len(f.instance) > len(best.instance)) {
			best = f
		}
		return false
	})
	return best
}

// walkFailures visits fs and their causes depth first, in order, until
// visit returns true.
func walkFailures(fs []*failure, visit func(*failure) bool) bool {
	for _, f := range fs {
		if visit(f) || walkFailures(f.causes, visit) {
			return true
		}
	}
	return false
}

func (l *locator) check(schema any, sptr string, v any, iptr []string) []*failure {
	s, ok := schema.(map[string]any)
	if !ok {
		if b, isBool := schema.(bool); isBool && !b {
			return []*failure{{instance: iptr, schema: sptr, keyword: "false"}}
		}
		return nil
	}
	fail := func(kw string) *failure { return &failure{instance: iptr, schema: sptr, keyword: kw} }
	var out []*failure
	if ref, ok := s["$ref"].(string); ok && strings.HasPrefix(ref, "#") {
		target := ref[1:]
		out = append(out, l.check(resolve(l.root, target), target, v, iptr)...)
	}
	if t, ok := s["type"]; ok && !typeMatches(t, v) {
		return append(out, fail("type"))
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, x := range enum {
			if equalJSON(x, v) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, fail("enum"))
		}
	}
	if c, ok := s["const"]; ok && !equalJSON(c, v) {
		out = append(out, fail("const"))
	}
	switch x := v.(type) {
	case float64:
		if m, ok := s["minimum"].(float64); ok && x < m {
			out = append(out, fail("minimum"))
		}
		if m, ok := s["maximum"].(float64); ok && x > m {
			out = append(out, fail("maximum"))
		}
		if m, ok := s["exclusiveMinimum"].(float64); ok && x <= m {
			out = append(out, fail("exclusiveMinimum"))
		}
		if m, ok := s["exclusiveMaximum"].(float64); ok && x >= m {
			out = append(out, fail("exclusiveMaximum"))
		}
		if m, ok := s["multipleOf"].(float64); ok && m > 0 {
			if _, f := math.Modf(x / m); f != 0 {
				out = append(out, fail("multipleOf"))
			}
		}
	case string:
		n := float64(utf8.RuneCountInString(x))
		if m, ok := s["minLength"].(float64); ok && n < m {
			out = append(out, fail("minLength"))
		}
		if m, ok := s["maxLength"].(float64); ok && n > m {
			out = append(out, fail("maxLength"))
		}
		if p, ok := s["pattern"].(string); ok && l.patterns[p] != nil && !l.patterns[p].MatchString(x) {
			out = append(out, fail("pattern"))
		}
	case []any:
		n := float64(len(x))
		if m, ok := s["minItems"].(float64); ok && n < m {
			out = append(out, fail("minItems"))
		}
		if m, ok := s["maxItems"].(float64); ok && n > m {
			out = append(out, fail("maxItems"))
		}
		if u, ok := s["uniqueItems"].(bool); ok && u {
		dup:
			for i := range x {
				for j := i + 1; j < len(x); j++ {
					if equalJSON(x[i], x[j]) {
						out = append(out, fail("uniqueItems"))
						break dup
					}
				}
			}
		}
		prefix, _ := s["prefixItems"].([]any)
		for i, item := range x {
			ip := append(append([]string(nil), iptr...), strconv.Itoa(i))
			if i < len(prefix) {
				out = append(out, l.check(prefix[i], sptr+"/prefixItems/"+strconv.Itoa(i), item, ip)...)
			} else if items, ok := s["items"]; ok {
				out = append(out, l.check(items, sptr+"/items", item, ip)...)
			}
		}
	case map[string]any:
		out = append(out, l.object(s, sptr, x, iptr)...)
	}
	if all, ok := s["allOf"].([]any); ok {
		for i, b := range all {
			out = append(out, l.check(b, sptr+"/allOf/"+strconv.Itoa(i), v, iptr)...)
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		branches, ok := s[kw].([]any)
		if !ok {
			continue
		}
		g := fail(kw)
		passed := 0
		for i, b := range branches {
			fs := l.check(b, sptr+"/"+kw+"/"+strconv.Itoa(i), v, iptr)
			if len(fs) == 0 {
				passed++
				continue
			}
			g.causes = append(g.causes, fs...)
		}
		if passed == 0 || (kw == "oneOf" && passed > 1) {
			if passed > 1 {
				g.causes = nil
			}
			out = append(out, g)
		}
	}
	if not, ok := s["not"]; ok && len(l.check(not, sptr+"/not", v, iptr)) == 0 {
		out = append(out, fail("not"))
	}
	if cond, ok := s["if"]; ok {
		if len(l.check(cond, sptr+"/if", v, iptr)) == 0 {
			if then, ok := s["then"]; ok {
				out = append(out, l.check(then, sptr+"/then", v, iptr)...)
			}
		} else if els, ok := s["else"]; ok {
			out = append(out, l.check(els, sptr+"/else", v, iptr)...)
		}
	}
	return out
}

// object checks the object keywords of s against x.
func (l *locator) object(s map[string]any, sptr string, x map[string]any, iptr []string) []*failure {
	var out []*failure
	fail := func(kw string) *failure { return &failure{instance: iptr, schema: sptr, keyword: kw} }
	if req, ok := s["required"].([]any); ok {
		var names []string
		for _, r := range req {
			if name, _ := r.(string); name != "" {
				names = append(names, name)
			}
		}
		for _, name := range names {
			if _, has := x[name]; !has {
				f := fail("required")
				f.missing, f.required = name, names
				out = append(out, f)
				break
			}
		}
	}
	if dr, ok := s["dependentRequired"].(map[string]any); ok {
		for _, k := range sortedKeys(dr) {
			if _, has := x[k]; !has {
				continue
			}
			names, _ := dr[k].([]any)
			for _, n := range names {
				if name, _ := n.(string); name != "" {
					if _, has := x[name]; !has {
						f := &failure{instance: iptr, schema: sptr + "/dependentRequired", keyword: k, missing: name}
						out = append(out, f)
						break
					}
				}
			}
		}
	}
	n := float64(len(x))
	if m, ok := s["minProperties"].(float64); ok && n < m {
		out = append(out, fail("minProperties"))
	}
	if m, ok := s["maxProperties"].(float64); ok && n > m {
		out = append(out, fail("maxProperties"))
	}
	props, _ := s["properties"].(map[string]any)
	pats, _ := s["patternProperties"].(map[string]any)
	var extra []string
	for _, name := range sortedKeys(x) {
		ip := append(append([]string(nil), iptr...), name)
		matched := false
		if p, ok := props[name]; ok {
			matched = true
			out = append(out, l.check(p, sptr+"/properties/"+escape(name), x[name], ip)...)
		}
		for _, pat := range sortedKeys(pats) {
			if re := l.patterns[pat]; re != nil && re.MatchString(name) {
				matched = true
				out = append(out, l.check(pats[pat], sptr+"/patternProperties/"+escape(pat), x[name], ip)...)
			}
		}
		if matched {
			continue
		}
		switch ap := s["additionalProperties"].(type) {
		case bool:
			if !ap {
				extra = append(extra, name)
			}
		case map[string]any:
			out = append(out, l.check(ap, sptr+"/additionalProperties", x[name], ip)...)
		}
	}
	if len(extra) > 0 {
		f := fail("additionalProperties")
		f.extra = extra
		out = append(out, f)
	}
	return out
}

// compilePatterns compiles every "pattern" and "patternProperties" regular
// expression of a schema once, as the library does (Go RE2 syntax).
func compilePatterns(doc any) (map[string]*regexp.Regexp, error) {
	out := map[string]*regexp.Regexp{}
	var walk func(x any, key string) error
	add := func(p string) error {
		if _, ok := out[p]; ok {
			return nil
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return err
		}
		out[p] = re
		return nil
	}
	walk = func(x any, key string) error {
		switch t := x.(type) {
		case map[string]any:
			for k, v := range t {
				if key == "properties" || key == "$defs" {
					if err := walk(v, ""); err != nil {
						return err
					}
					continue
				}
				if k == "pattern" && key != "properties" {
					if p, ok := v.(string); ok {
						if err := add(p); err != nil {
							return err
						}
					}
				}
				if k == "patternProperties" {
					if m, ok := v.(map[string]any); ok {
						for p := range m {
							if err := add(p); err != nil {
								return err
							}
						}
					}
				}
				if err := walk(v, k); err != nil {
					return err
				}
			}
		case []any:
			for _, v := range t {
				if err := walk(v, key); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(doc, "")
}

func typeMatches(t any, v any) bool {
	switch tt := t.(type) {
	case string:
		return isType(tt, v)
	case []any:
		for _, x := range tt {
			if s, ok := x.(string); ok && isType(s, v) {
				return true
			}
		}
		return false
	}
	return true
}

func isType(t string, v any) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		if !ok {
			return false
		}
		_, frac := math.Modf(f)
		return frac == 0
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	}
	return false
}

func equalJSON(a, b any) bool { return reflect.DeepEqual(a, b) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// project turns one validation failure into the safe INVALID_ARGUMENT error:
// field points into the arguments, constraint into the schema, expected is
// copied from the schema at constraint. The rejected value is never echoed.
func (e *entry) project(v *failure) *contract.Error {
	field := pointer(v.instance)
	schemaPtr := v.schema
	kw := []string{v.keyword}
	constraint := schemaPtr + pointer(kw)
	msg := "argument does not match the input schema"
	hint := "" // where a misplaced member belongs
	switch v.keyword {
	case "required":
		field = field + "/" + escape(v.missing)
		msg = "a required argument is missing"
	case "additionalProperties":
		msg = "an argument is not accepted by this tool"
		// The name is the caller's own input: point at it only when it is
		// short and printable, never echo a huge or binary key.
		if len(v.extra) > 0 && safeName(v.extra[0]) {
			hint = e.belongsHint(v.instance, v.extra[0])
			field = field + "/" + escape(v.extra[0])
		} else if len(v.extra) > 0 {
			msg = "an argument name that is too long or not printable is not accepted by this tool"
		}
	case "enum", "const":
		msg = "argument is not one of the accepted values"
	case "type":
		msg = "argument has the wrong type"
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
		msg = "argument is out of range"
	case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties":
		msg = "argument has the wrong length"
	case "uniqueItems":
		msg = "argument repeats an item; items must be unique"
	case "pattern":
		msg = "argument has the wrong format"
	case "oneOf", "anyOf":
		msg = "argument matches none of the accepted shapes"
	case "false", "not":
		msg = "an argument is not accepted here"
	default:
		if strings.HasSuffix(schemaPtr, "/dependentRequired") {
			// The field is the given member that needs the other (its
			// keyword); both are schema names, never caller values.
			field = field + "/" + escape(v.keyword)
			msg = v.keyword + " requires " + v.missing + ", which is missing"
		}
	}
	if v.keyword == "false" {
		constraint, kw = schemaPtr, nil
	}
	if w := e.boundWords(schemaPtr, v.keyword); w != "" {
		msg += ": " + w
	}
	if field == "" {
		msg += " (at the top level)"
	} else {
		msg += " (at " + field + ")"
	}
	if hint != "" {
		msg += ": " + hint
	}
	return &contract.Error{
		Code:       contract.CodeInvalidArgument,
		Message:    msg,
		Retryable:  false,
		Field:      field,
		Constraint: constraint,
		Expected:   e.expected(schemaPtr, kw),
	}
}

// boundWords states in words the bound the keyword at schemaPtr sets
// ("at most 5000", "at least 1 characters", "matching ^[a-z]+$"), or ""
// for a keyword that is not a bound. tools/list does not publish bounds
// (Lean), so the error is where a caller learns them; the words come
// from the schema, never from the rejected value.
func (e *entry) boundWords(schemaPtr, keyword string) string {
	node, _ := resolve(e.doc, schemaPtr).(map[string]any)
	if node == nil {
		return ""
	}
	if keyword == "pattern" {
		if p, ok := node["pattern"].(string); ok {
			return "give a value matching the regular expression " + p
		}
		return ""
	}
	n, ok := node[keyword].(float64)
	if !ok {
		return ""
	}
	num := strconv.FormatFloat(n, 'f', -1, 64)
	switch keyword {
	case "minimum":
		return "give at least " + num
	case "maximum":
		return "give at most " + num
	case "exclusiveMinimum":
		return "give more than " + num
	case "exclusiveMaximum":
		return "give less than " + num
	case "multipleOf":
		return "give a multiple of " + num
	case "minLength":
		return "give at least " + num + " characters"
	case "maxLength":
		return "give at most " + num + " characters"
	case "minItems":
		return "give at least " + num + " items"
	case "maxItems":
		return "give at most " + num + " items"
	case "minProperties":
		return "give at least " + num + " members"
	case "maxProperties":
		return "give at most " + num + " members"
	}
	return ""
}

// misplaced returns the additionalProperties failure at the instance
// path at (among fails and their causes) whose unknown member the input
// schema has elsewhere (belongsHint), or nil.
func (e *entry) misplaced(fails []*failure, at []string) *failure {
	var found *failure
	walkFailures(fails, func(f *failure) bool {
		if f.keyword == "additionalProperties" && slices.Equal(f.instance, at) && len(f.extra) > 0 && safeName(f.extra[0]) && e.belongsHint(f.instance, f.extra[0]) != "" {
			found = f
		}
		return found != nil
	})
	return found
}

// maxHomeDepth bounds how deep belongsHint looks for a member's home.
const maxHomeDepth = 4

// belongsHint names where an argument the tool does not accept at the
// instance path at belongs, when the tool's input schema has a member of
// that name elsewhere (a member of a nested object given at the top
// level, or a top-level member given inside an object): "projection
// belongs under read: {"read":{"projection":[...]}}". It returns "" when
// the schema has no such member. Only schema names are quoted, never the
// caller's values.
func (e *entry) belongsHint(at []string, name string) string {
	type home struct {
		path []string // property names from the root, name last
		node any      // the member's schema
	}
	var homes []home
	seen := map[string]bool{}
	var walk func(node any, path []string, depth int)
	walk = func(node any, path []string, depth int) {
		obj, _ := e.deref(node).(map[string]any)
		props, _ := obj["properties"].(map[string]any)
		if m, ok := props[name]; ok && !slices.Equal(path, at) && !seen[pointer(path)] {
			seen[pointer(path)] = true
			homes = append(homes, home{append(slices.Clone(path), name), e.deref(m)})
		}
		if depth >= maxHomeDepth {
			return
		}
		for _, k := range sortedKeys(props) {
			walk(props[k], append(slices.Clone(path), k), depth+1)
		}
		// The alternatives of a member (target: {process_ref} or {pid})
		// are homes at the same path.
		for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
			alts, _ := obj[kw].([]any)
			for _, a := range alts {
				walk(a, path, depth+1)
			}
		}
	}
	walk(e.doc, nil, 0)
	if len(homes) == 0 {
		return ""
	}
	slices.SortStableFunc(homes, func(a, b home) int { return len(a.path) - len(b.path) })
	var top bool
	var under []string
	for _, h := range homes {
		if len(h.path) == 1 {
			top = true
		} else {
			under = append(under, strings.Join(h.path[:len(h.path)-1], "."))
		}
	}
	var where []string
	if top {
		where = append(where, "at the top level")
	}
	if n := len(under); n > 0 {
		w := under[n-1]
		if n > 1 {
			w = strings.Join(under[:n-1], ", ") + " or " + w
		}
		where = append(where, "under "+w)
	}
	// An example of the first home, the value by the member's type.
	h := homes[0]
	ex := "..."
	if node, _ := h.node.(map[string]any); node != nil {
		switch node["type"] {
		case "array":
			ex = "[...]"
		case "object":
			ex = "{...}"
		case "string":
			ex = `"..."`
		}
	}
	ex = strconv.Quote(h.path[len(h.path)-1]) + ":" + ex
	for i := len(h.path) - 2; i >= 0; i-- {
		ex = strconv.Quote(h.path[i]) + ":{" + ex + "}"
	}
	return name + " belongs " + strings.Join(where, " or ") + ": {" + ex + "}"
}

// deref follows a chain of local $ref (at most maxHomeDepth) from node.
func (e *entry) deref(node any) any {
	for i := 0; i < maxHomeDepth; i++ {
		obj, _ := node.(map[string]any)
		ref, ok := obj["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			break
		}
		node = resolve(e.doc, strings.TrimPrefix(ref, "#"))
	}
	return node
}

// expected copies the keyword's value from the schema (and, for
// additionalProperties, the accepted property names).
func (e *entry) expected(schemaPtr string, kw []string) any {
	node := resolve(e.doc, schemaPtr)
	obj, ok := node.(map[string]any)
	if !ok || len(kw) == 0 {
		return nil
	}
	val := resolve(node, pointer(kw))
	out := map[string]any{kw[0]: val}
	if kw[0] == "additionalProperties" {
		if props, ok := obj["properties"].(map[string]any); ok {
			names := make([]string, 0, len(props))
			for n := range props {
				names = append(names, n)
			}
			sort.Strings(names)
			out["properties"] = names
		}
	}
	if kw[0] == "type" || kw[0] == "required" || kw[0] == "enum" {
		return out
	}
	if t, ok := obj["type"]; ok {
		out["type"] = t
	}
	return out
}

func resolve(doc any, ptr string) any {
	if ptr == "" {
		return doc
	}
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

func pointer(toks []string) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteByte('/')
		b.WriteString(escape(t))
	}
	return b.String()
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// MaxEchoedName bounds an unknown argument name that an error may point at.
const MaxEchoedName = 64

func safeName(n string) bool {
	if len(n) == 0 || len(n) > MaxEchoedName {
		return false
	}
	for _, r := range n {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return false
		}
	}
	return true
}

// integralNumbers rewrites numbers with an integral value written as
// decimals or exponents (1.0, 2e3) as plain integers: JSON Schema calls them
// integers, so they pass "type": "integer", and handlers decoding into Go
// ints must accept them too. Other values are untouched.
func integralNumbers(args json.RawMessage) json.RawMessage {
	if !strings.ContainsAny(string(args), ".eE") {
		return args
	}
	d := json.NewDecoder(strings.NewReader(string(args)))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return args
	}
	changed := false
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			for k, e := range t {
				t[k] = walk(e)
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
		case json.Number:
			s := string(t)
			if !strings.ContainsAny(s, ".eE") {
				return t
			}
			r, ok := new(big.Rat).SetString(s)
			if ok && r.IsInt() && r.Num().BitLen() < 64 {
				changed = true
				return json.Number(r.Num().String())
			}
		}
		return x
	}
	v = walk(v)
	if !changed {
		return args
	}
	b, err := json.Marshal(v)
	if err != nil {
		return args
	}
	return b
}

// altGroup is an anyOf/oneOf whose every branch failed only for missing
// members ({"anyOf":[{"required":["a"]},{"required":["b"]}]}): the caller
// must give every member of one of alts.
type altGroup struct {
	g    *failure
	alts [][]string
}

// names returns every member the alternatives name.
func (a *altGroup) names() []string {
	var out []string
	for _, alt := range a.alts {
		out = append(out, alt...)
	}
	return out
}

// requiredAlternatives finds, among the failures, an anyOf/oneOf group
// whose branches each failed only for required members, or nil. inst is
// the decoded arguments; the missing members of each branch are its
// schema's required names absent at the group's instance location.
func requiredAlternatives(fails []*failure, inst any) *altGroup {
	var found *altGroup
	var walk func(f *failure)
	walk = func(f *failure) {
		if found != nil {
			return
		}
		if (f.keyword == "anyOf" || f.keyword == "oneOf") && len(f.causes) > 1 {
			obj, _ := resolveInstance(inst, f.instance).(map[string]any)
			var alts [][]string
			seen := map[string]bool{}
			for _, c := range f.causes {
				if c.keyword != "required" || len(c.causes) > 0 || seen[c.schema] || len(c.instance) != len(f.instance) {
					alts = nil
					break
				}
				seen[c.schema] = true
				var missing []string
				for _, name := range c.required {
					if _, has := obj[name]; !has {
						missing = append(missing, name)
					}
				}
				alts = append(alts, missing)
			}
			if len(alts) > 1 {
				found = &altGroup{g: f, alts: alts}
				return
			}
		}
		for _, c := range f.causes {
			walk(c)
		}
	}
	for _, f := range fails {
		walk(f)
	}
	return found
}

// resolveInstance returns the value at the JSON Pointer tokens ptr in v,
// or nil.
func resolveInstance(v any, ptr []string) any {
	for _, tok := range ptr {
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// alternatives is the INVALID_ARGUMENT of a missing choice: it names every
// alternative (expected.one_of_required), not only the first branch's.
func (e *entry) alternatives(a *altGroup) *contract.Error {
	field := pointer(a.g.instance)
	at := "the top level"
	if field != "" {
		at = field
	}
	words := make([]string, len(a.alts))
	for i, alt := range a.alts {
		words[i] = strings.Join(alt, " and ")
	}
	return &contract.Error{
		Code:       contract.CodeInvalidArgument,
		Message:    "one of these is required: " + strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1] + " (at " + at + ")",
		Field:      field,
		Constraint: a.g.schema + pointer([]string{a.g.keyword}),
		Expected:   map[string]any{"one_of_required": a.alts},
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// severalAlternatives is the INVALID_ARGUMENT of an object that gives the
// required members of more than one branch of a oneOf or anyOf whose branches are
// alternatives ({pid, system} where target is one of {process_ref},
// {pid} or {system}): it names the alternatives and points at the object
// the caller sent, rather than at a member of the first branch it failed.
// An object that gives the required members of exactly one alternative
// chose it: the error is that alternative's (an unknown member beside
// pid is refused at that member, not as a missing process_ref). It
// returns nil when no group failed either way.
func (e *entry) severalAlternatives(l *locator, fails []*failure, inst any) *contract.Error {
	var found *contract.Error
	var walk func(f *failure)
	walk = func(f *failure) {
		if found != nil {
			return
		}
		if f.keyword == "oneOf" || f.keyword == "anyOf" {
			node, _ := resolve(e.doc, f.schema).(map[string]any)
			branches, _ := node[f.keyword].([]any)
			obj, _ := resolveInstance(inst, f.instance).(map[string]any)
			if chosen, ok := selectBranch(branches, obj); ok {
				// The caller chose a branch by its discriminating
				// member (kind): the error is that branch's.
				if chosen < 0 {
					return
				}
				prefix := f.schema + "/" + f.keyword + "/" + strconv.Itoa(chosen)
				var mine []*failure
				for _, c := range f.causes {
					if c.schema == prefix || strings.HasPrefix(c.schema, prefix+"/") {
						mine = append(mine, c)
					}
				}
				if leaf := l.leaf(mine); leaf != nil {
					found = e.project(leaf)
				}
				return
			}
			var alts [][]string
			given, chosen := 0, -1
			for bi, b := range branches {
				bm, _ := b.(map[string]any)
				req, _ := bm["required"].([]any)
				if len(req) == 0 {
					alts = nil
					break
				}
				var names []string
				all := true
				for _, r := range req {
					name, _ := r.(string)
					names = append(names, name)
					if _, has := obj[name]; !has {
						all = false
					}
				}
				if all {
					given++
					chosen = bi
				}
				alts = append(alts, names)
			}
			if obj != nil && len(alts) > 1 && given == 1 {
				prefix := f.schema + "/" + f.keyword + "/" + strconv.Itoa(chosen)
				var mine []*failure
				for _, c := range f.causes {
					if c.schema == prefix || strings.HasPrefix(c.schema, prefix+"/") {
						mine = append(mine, c)
					}
				}
				if leaf := l.leaf(mine); leaf != nil {
					found = e.project(leaf)
					return
				}
			}
			if obj != nil && len(alts) > 1 && given > 1 {
				field := pointer(f.instance)
				at := "the top level"
				if field != "" {
					at = field
				}
				words := make([]string, len(alts))
				for i, alt := range alts {
					words[i] = strings.Join(alt, " and ")
				}
				found = &contract.Error{
					Code:       contract.CodeInvalidArgument,
					Message:    "give exactly one of " + strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1] + ", not several (at " + at + ")",
					Field:      field,
					Constraint: f.schema + "/" + f.keyword,
					Expected:   map[string]any{"one_of_required": alts},
				}
				return
			}
		}
		for _, c := range f.causes {
			walk(c)
		}
	}
	for _, f := range fails {
		walk(f)
	}
	return found
}

// selectBranch finds the branch of an anyOf/oneOf that obj selects by a
// discriminating member: a member every branch fixes to one value (a
// one-value enum or a const), as a provider's or a source's kind. It
// reports ok when the branches are discriminated that way and obj gives
// the member; chosen is the matching branch, or -1 when obj's value
// matches none (the enclosing schema's own enum of the member reports
// that).
func selectBranch(branches []any, obj map[string]any) (chosen int, ok bool) {
	if len(branches) < 2 || obj == nil {
		return 0, false
	}
	first, _ := branches[0].(map[string]any)
	props, _ := first["properties"].(map[string]any)
	for key := range props {
		given, isStr := obj[key].(string)
		if !isStr {
			continue
		}
		chosen, all := -1, true
		for i, bi := range branches {
			b, _ := bi.(map[string]any)
			bp, _ := b["properties"].(map[string]any)
			v, fixed := fixedValue(bp[key])
			if !fixed {
				all = false
				break
			}
			if v == given {
				chosen = i
			}
		}
		if all {
			return chosen, true
		}
	}
	return 0, false
}

// unknownMember is the INVALID_ARGUMENT of a member that no schema at its
// object's place accepts, when leaf (a missing or refused member of that
// object) would otherwise be reported: field points at the member,
// expected.properties lists every member accepted there (across the
// alternatives of an anyOf or oneOf), and the message says what else the
// object needs (expected.one_of_required for alternatives). It returns
// nil when every refused member there is accepted by some alternative
// (the alternative's own error then explains it) or when no refused name
// is short and printable (never echoed).
func (e *entry) unknownMember(fails []*failure, leaf *failure) *contract.Error {
	at := leaf.instance
	var found *failure
	var name string
	var accepted []string
	walkFailures(fails, func(f *failure) bool {
		if f.keyword != "additionalProperties" || !slices.Equal(f.instance, at) {
			return false
		}
		acc := e.acceptedAt(f.schema)
		for _, x := range f.extra {
			if safeName(x) && !slices.Contains(acc, x) {
				found, name, accepted = f, x, acc
				return true
			}
		}
		return false
	})
	if found == nil {
		return nil
	}
	one := *found
	one.extra = []string{name}
	pe := e.project(&one)
	exp, _ := pe.Expected.(map[string]any)
	if exp == nil {
		exp = map[string]any{"additionalProperties": false}
	}
	exp["properties"] = accepted
	if alts := e.alternativesAt(fails, at); len(alts) > 1 && !sharedMember(alts) && (leaf.keyword != "required" || slices.Contains(slices.Concat(alts...), leaf.missing)) {
		words := make([]string, len(alts))
		for i, alt := range alts {
			words[i] = strings.Join(alt, " and ")
		}
		pe.Message += "; give one of " + strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
		exp["one_of_required"] = alts
	} else if leaf.keyword == "required" {
		pe.Message += "; " + leaf.missing + " is required too"
	}
	pe.Expected = exp
	return pe
}

// branchParent returns the schema pointer holding the anyOf, oneOf or
// allOf of which ptr is one branch (".../anyOf/2" -> "..."), or false.
func branchParent(ptr string) (string, bool) {
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return "", false
	}
	if _, err := strconv.Atoi(ptr[i+1:]); err != nil {
		return "", false
	}
	head := ptr[:i]
	for _, kw := range []string{"/anyOf", "/oneOf", "/allOf"} {
		if parent, ok := strings.CutSuffix(head, kw); ok {
			return parent, true
		}
	}
	return "", false
}

// acceptedAt lists, sorted, every property name a value at the object
// schema schemaPtr may have: that schema's own and, when it is a branch,
// those of the schema holding the branches and of all its branches.
func (e *entry) acceptedAt(schemaPtr string) []string {
	for {
		parent, ok := branchParent(schemaPtr)
		if !ok {
			break
		}
		schemaPtr = parent
	}
	seen := map[string]bool{}
	var walk func(node any, depth int)
	walk = func(node any, depth int) {
		obj, _ := e.deref(node).(map[string]any)
		props, _ := obj["properties"].(map[string]any)
		for k := range props {
			seen[k] = true
		}
		if depth >= maxHomeDepth {
			return
		}
		for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
			alts, _ := obj[kw].([]any)
			for _, a := range alts {
				walk(a, depth+1)
			}
		}
	}
	walk(resolve(e.doc, schemaPtr), 0)
	return sortedKeys(seen)
}

// alternativesAt returns the required members of each branch of the
// anyOf or oneOf that failed at the instance location at, when every
// branch requires some ({process_ref}, {pid} or {system}), or nil.
func (e *entry) alternativesAt(fails []*failure, at []string) [][]string {
	var alts [][]string
	walkFailures(fails, func(f *failure) bool {
		if (f.keyword != "anyOf" && f.keyword != "oneOf") || !slices.Equal(f.instance, at) {
			return false
		}
		node, _ := resolve(e.doc, f.schema).(map[string]any)
		branches, _ := node[f.keyword].([]any)
		var out [][]string
		for _, b := range branches {
			bm, _ := e.deref(b).(map[string]any)
			req, _ := bm["required"].([]any)
			if len(req) == 0 {
				return false
			}
			var names []string
			for _, r := range req {
				if n, _ := r.(string); n != "" {
					names = append(names, n)
				}
			}
			out = append(out, names)
		}
		alts = out
		return true
	})
	return alts
}

// sharedMember reports whether one member is required by every
// alternative (a discriminator such as kind): the alternatives are then
// told by that member's values, not as lists of names.
func sharedMember(alts [][]string) bool {
	for _, name := range alts[0] {
		all := true
		for _, alt := range alts[1:] {
			if !slices.Contains(alt, name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}
