package bin

import (
	"errors"
	"fmt"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// unknownAnswer is the answer to a lookup (a symbol by name, a section by
// name, an address) whose deciding structure was unresolved: the symbol
// tables or the section table were not read completely, or the bytes lie
// past the end of the file. It is not the caller's mistake: the tool
// answers with no rows, status partial, the reason as a warning and the
// unresolved structures, never INVALID_ARGUMENT.
type unknownAnswer struct {
	// Field is the argument whose lookup is unknown ("/symbol").
	Field string
	// Reason says what was not read and why that leaves the answer unknown.
	Reason     string
	Unresolved []Unresolved
}

func (u *unknownAnswer) Error() string { return u.Reason }

// asUnknown returns err's unknownAnswer, or nil.
func asUnknown(err error) *unknownAnswer {
	var u *unknownAnswer
	if errors.As(err, &u) {
		return u
	}
	return nil
}

// result is the partial result of an unknown lookup: data has the file
// identity, no rows, the unresolved structures and coverage.upstream naming
// the lookup; the status is partial with Reason as its warning.
func (u *unknownAnswer) result(source string, now time.Time, file *Identity) *contract.Result {
	res := contract.NewResult(source, now, nil)
	d := &paged{File: file, Rows: []struct{}{}, Unresolved: u.Unresolved, Coverage: pageCoverage{Upstream: map[string]string{u.Field: "unknown: " + u.Reason}}}
	res.Warn(u.Reason + "; the answer is unknown, not absent")
	res.Coverage = d.Coverage
	res.Data = d
	return res
}

// sectionsUnknown returns an unknownAnswer for field when the section table
// was not read completely (a name missing from it is then unknown), or nil.
func sectionsUnknown(in *Inspection, field, what string) *unknownAnswer {
	st := in.Facets["sections"]
	if st.State == FacetComplete || st.State == FacetPartial && in.Admitted {
		// Partial ELF/PE sections have every header and name; only some
		// contents are missing.
		return nil
	}
	reason := fmt.Sprintf("the section table is %s", orUnknown(st.State))
	if st.Reason != "" {
		reason += " (" + st.Reason + ")"
	}
	return &unknownAnswer{Field: field, Reason: reason + ": whether " + what + " exists is unknown", Unresolved: in.Unresolved}
}

// contentsUnknown returns an unknownAnswer for a section whose file bytes
// lie (partly) past the end of the file.
func contentsUnknown(in *Inspection, s *Section, field string) *unknownAnswer {
	var un []Unresolved
	for _, u := range in.Unresolved {
		if u.Structure == "section "+s.Name+" contents" || u.Structure == "section "+s.Name+" raw data" {
			un = append(un, u)
		}
	}
	return &unknownAnswer{Field: field, Reason: fmt.Sprintf("section %s (file offset %s, %s bytes) extends past the end of the file: its bytes are not available", s.Name, s.Offset, s.FileSize), Unresolved: un}
}

func orUnknown(s string) string {
	if s == "" {
		return FacetUnresolved
	}
	return s
}
