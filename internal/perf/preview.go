package perf

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
)

// maxLine bounds one text line, JSONL record or CSV record held in memory
// (further bounded by limits.max_memory_bytes).
const maxLine = 1 << 20

// previewFields are preview_artifact's own arguments.
type previewFields struct {
	Offset            *integer `json:"offset,omitempty"`
	TextFragmentChars *integer `json:"text_fragment_chars,omitempty"`
}

// firstRow is the offset argument (0 when absent).
func (f *previewFields) firstRow() int64 {
	if f.Offset == nil {
		return 0
	}
	return int64(*f.Offset)
}

type previewArgs struct {
	operationArgs
	previewFields
}

func previewOperation() *Operation {
	return bindOperation(&Operation{
		Name:        "preview_artifact",
		Title:       "Preview an artifact",
		Description: "Preview one text, JSON, JSONL or CSV artifact as pages of logical rows (lines or line fragments, JSON entries, JSONL records, CSV records). Required: sources (exactly one).",
		MinSources:  1, MaxSources: 1,
		Formats: []string{FormatText, FormatJSON, FormatJSONL, FormatCSV},
		Fields: []Field{
			{"offset", js{"type": "integer", "minimum": 0, "description": "First row (zero-based) of the first page."}},
			{"text_fragment_chars", js{"type": "integer", "minimum": 1, "maximum": 4096, "description": "Longest text-line fragment, in characters."}},
		},
	}, func(ctx context.Context, req *Request, a *previewArgs) (*Output, error) {
		return runPreview(ctx, req, &a.previewFields)
	})
}

func runPreview(ctx context.Context, req *Request, a *previewFields) (*Output, error) {
	in := req.Inputs[0]
	var frag int64
	if a.TextFragmentChars != nil {
		frag = int64(*a.TextFragmentChars)
	}
	if a.TextFragmentChars != nil && in.format != FormatText {
		return nil, fieldErr(contract.CodeInvalidArgument, "/text_fragment_chars", "text_fragment_chars requires a text source; this source is %s", in.format)
	}
	offset := a.firstRow()
	if offset < 0 {
		return nil, fieldErr(contract.CodeInvalidArgument, "/offset", "offset must not be negative")
	}
	f, err := os.Open(in.file)
	if err != nil {
		return nil, contract.Errorf(contract.CodeInputChanged, "the source can no longer be read")
	}
	defer f.Close()
	lineCap := int64(maxLine)
	if req.Limits.MaxMemoryBytes < lineCap {
		lineCap = req.Limits.MaxMemoryBytes
	}
	p := newPager(req, req.Start.Row)
	if !req.Resuming {
		p.start = offset
	}
	var out *Output
	switch in.format {
	case FormatText:
		out, err = previewText(ctx, f, req, p, int(frag), lineCap)
	case FormatJSONL:
		out, err = previewJSONL(ctx, f, req, p, lineCap)
	case FormatCSV:
		out, err = previewCSV(ctx, f, req, p)
	case FormatJSON:
		out, err = previewJSON(ctx, f, req, p, req.Limits.MaxMemoryBytes)
	default:
		return nil, contract.Errorf(contract.CodeUnsupportedFormat, "preview_artifact does not read %s", in.format).WithDetail("accepted_formats", []string{FormatText, FormatJSON, FormatJSONL, FormatCSV})
	}
	if err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	if !req.Resuming && offset > 0 && len(out.Rows) == 0 {
		return nil, fieldErr(contract.CodeInvalidArgument, "/offset", "offset %d is at or beyond the end of the source", offset).WithDetail("rows_available", contract.Int(p.seen))
	}
	if out.Summary == nil {
		out.Summary = map[string]any{}
	}
	p.noteBudget(out)
	out.Summary["format"] = in.format
	if a.TextFragmentChars != nil {
		out.Summary["text_fragment_chars"] = frag
		out.Summary["row_unit"] = "fragment"
	} else {
		out.Summary["row_unit"] = map[string]string{FormatText: "line", FormatJSON: "entry", FormatJSONL: "record", FormatCSV: "record"}[in.format]
	}
	return out, nil
}

func decodeFail(format string, args ...any) *contract.Error {
	return contract.Errorf(contract.CodeDecodeFailed, format, args...)
}

// canon is the canonical value projection: integers beyond the
// interoperable JSON range (±2^53-1) and non-finite numbers become strings.
func canon(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			if i > 1<<53-1 || i < -(1<<53-1) {
				return string(t)
			}
			if i == 0 && strings.HasPrefix(string(t), "-") {
				return math.Copysign(0, -1) // -0 stays negative zero
			}
			return i
		}
		if !strings.ContainsAny(string(t), ".eE") {
			return string(t) // integer beyond int64
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return string(t)
		}
		if math.Abs(f) > 1<<53-1 {
			// Beyond ±(2^53-1) a float64 no longer holds every integer:
			// an integral literal (1e20) becomes its exact decimal string,
			// any other literal is kept verbatim.
			if boundedExponent(string(t)) {
				if r, ok := new(big.Rat).SetString(string(t)); ok && r.IsInt() {
					return r.Num().String()
				}
			}
			return string(t)
		}
		return f
	case map[string]any:
		for k, e := range t {
			t[k] = canon(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = canon(e)
		}
		return t
	}
	return v
}

// errRecordTooLong is recordLimiter's error.
var errRecordTooLong = errors.New("CSV record too long")
