// Package har reads HTTP Archive (HAR 1.2) captures and compares them by
// these rules: requests are grouped by method and URL (a
// repeated-request group), never matched one to one across captures; a
// partial response multiset contained in a complete peer means omissions
// can explain every retained sample; a retained sample absent from a
// complete peer group is an independent difference. WebSocket connections
// correspond by method, URL and order among same-URL connections, and
// their frames by ordered position within direction (see websocket.go).
//
// Facts come from the HAR 1.2 fields log.entries[].request.method, .url,
// .response.status, .response.content.{size,mimeType,text,encoding},
// .time, .timings, and Chrome's _resourceType and _webSocketMessages
// extensions. Body digests are the SHA-256 of the body bytes as retained
// in content.text (base64-decoded when content.encoding is "base64"), and
// each names the representation it identifies (body_digest_of); an
// undecodable content.text keeps the digest and size of its own bytes; an
// entry without content.text has no retained body, which is unknown, not
// empty. Unknown values (time -1, status null or -1, content.size absent) stay
// unknown: they are null in rows, counted, and never summed or compared
// as zero.
//
// The document is read with encoding/json's streaming Decoder one entry at
// a time, so memory is the compact per-entry projection, not a decoded
// tree of the whole file.
package har

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/jsontext"
)

// MaxEntries bounds the entries one capture may hold (1,000,000).
const MaxEntries = 1_000_000

// cancelEvery is the number of loop iterations between context checks in
// parsing and comparison.
const cancelEvery = 1024

type rawEntry struct {
	StartedDateTime string   `json:"startedDateTime"`
	Time            *float64 `json:"time"`
	Request         *struct {
		Method *string `json:"method"`
		URL    string  `json:"url"`
	} `json:"request"`
	Response *struct {
		Status  *int `json:"status"`
		Content struct {
			Size     *float64 `json:"size"`
			MimeType string   `json:"mimeType"`
			Text     *string  `json:"text"`
			Encoding string   `json:"encoding"`
		} `json:"content"`
	} `json:"response"`
	Timings           map[string]*float64 `json:"timings"`
	ResourceType      string              `json:"_resourceType"`
	WebSocketMessages json.RawMessage     `json:"_webSocketMessages"`
}

// Body retention states of an entry's response body.
const (
	// BodyRetained: content.text is present and decodes; BodySHA256 is set.
	BodyRetained = "retained"
	// BodyAbsent: content.text is absent; the body is unknown, not empty.
	BodyAbsent = "absent"
	// BodyUndecodable: content.text is present but not valid base64
	// although content.encoding is base64; the body is unknown.
	BodyUndecodable = "undecodable"
	// BodyTruncated: content.text decodes to fewer bytes than
	// content.size says the response had: the producer cut it (browsers
	// keep only the first bytes of large bodies). BodySHA256 is the
	// digest of that partial text (BodyDigestOf "partial_..."), which
	// identifies no response: comparisons treat the body as unknown.
	BodyTruncated = "truncated"
	// BodySizeMismatch: content.text decodes to more bytes than
	// content.size: one of the two is wrong, so body and size are
	// compared as unknown; BodySHA256 is the digest of the text as given.
	BodySizeMismatch = "size_mismatch"
)

// Representations a body digest identifies (Entry.BodyDigestOf).
const (
	// DigestDecodedBase64: the bytes content.text decodes to when
	// content.encoding is "base64" (the response body bytes as recorded).
	DigestDecodedBase64 = "decoded_base64"
	// DigestTextUTF8: content.text's UTF-8 bytes, the body as the producer
	// recorded it as text (which need not be the bytes on the wire, e.g.
	// after charset decoding).
	DigestTextUTF8 = "text_utf8"
)

// Entry is one request/response pair of a capture.
type Entry struct {
	// Index is the capture-local position in log.entries: a lookup key
	// within this capture only, never a cross-capture identity.
	Index        int    `json:"index"`
	Started      string `json:"started,omitempty"`
	Method       string `json:"method"`
	URL          string `json:"url"`
	ResourceType string `json:"resource_type"`
	// Status is response.status; null when the HAR holds null, nothing or
	// a negative number such as -1 (unknown).
	Status   *int   `json:"status"`
	MimeType string `json:"mime_type,omitempty"`
	// Size is response.content.size in bytes as a decimal string; absent
	// when the field is absent or negative (unknown).
	Size string `json:"size,omitempty"`
	// Body is BodyRetained, BodyAbsent, BodyUndecodable, BodyTruncated or
	// BodySizeMismatch.
	Body string `json:"body"`
	// BodyBytes is the decoded length of content.text in bytes (decimal
	// string), given when it differs from Size (BodyTruncated,
	// BodySizeMismatch).
	BodyBytes  string `json:"body_bytes,omitempty"`
	BodySHA256 string `json:"body_sha256,omitempty"`
	// BodyDigestOf names the representation BodySHA256 identifies:
	// DigestDecodedBase64 or DigestTextUTF8.
	BodyDigestOf string `json:"body_digest_of,omitempty"`
	// TextSHA256 and TextSize (bytes, decimal) identify content.text's
	// own UTF-8 bytes when they do not decode (BodyUndecodable): the
	// retained input is identified although the body is unknown.
	TextSHA256 string `json:"text_sha256,omitempty"`
	TextSize   string `json:"text_size,omitempty"`
	// TimeMS is entry.time in milliseconds; absent when -1 or absent
	// (unknown). Timings are the HAR timings phases in milliseconds (-1
	// phases, meaning not applicable, omitted).
	TimeMS  *float64 `json:"time_ms,omitempty"`
	Timings Timings  `json:"timings_ms,omitzero"`
	// WebSocket is the frame inventory of a WebSocket connection entry
	// (resource type websocket, a ws:/wss: URL or _webSocketMessages
	// present); nil for other entries.
	WebSocket *Inventory `json:"websocket,omitempty"`
}

// timingPhases are the HAR 1.2 timings phases, in HAR order.
var timingPhases = [...]string{"blocked", "dns", "connect", "send", "wait", "receive", "ssl"}

// Timings holds the HAR timings phases in milliseconds; a phase that is
// absent, -1 or not finite is NaN and left out of the JSON object.
type Timings [len(timingPhases)]float64

// IsZero reports whether no phase is known.
func (t Timings) IsZero() bool {
	for _, v := range t {
		if !math.IsNaN(v) {
			return false
		}
	}
	return true
}

// MarshalJSON renders the known phases as {"phase": ms}.
func (t Timings) MarshalJSON() ([]byte, error) {
	m := map[string]float64{}
	for i, v := range t {
		if !math.IsNaN(v) {
			m[timingPhases[i]] = v
		}
	}
	return json.Marshal(m)
}

// Unresolved is an entry (by index) that could not be decoded or placed in
// a repeated-request group; its request is unknown, not absent.
type Unresolved struct {
	Index  int    `json:"index"`
	Reason string `json:"reason"`
}

// Reasons an entry is Unresolved.
const (
	// ReasonShape: the entry is JSON of another shape than a HAR entry;
	// none of its facts is read.
	ReasonShape = "the entry does not match the HAR entry shape"
	// ReasonNoRequestResponse: the entry lacks request or response; none
	// of its facts is read.
	ReasonNoRequestResponse = "the entry lacks request or response"
	// ReasonMethodUnknown: request.method is null or absent; the entry's
	// other facts are read and counted in Unknowns.
	ReasonMethodUnknown = "request.method is null or absent: the entry's repeated-request group is unknown"
)

// Unknowns counts unknown values among the entries of a capture that have
// a request and a response: the resolved ones and those unresolved only
// because request.method is unknown (Method counts these).
type Unknowns struct {
	// Method: entries whose request.method is null or absent (listed in
	// Unresolved with ReasonMethodUnknown).
	Method int `json:"method_unknown"`
	// Time: entries whose time is -1, negative, absent or not finite.
	Time int `json:"time_unknown"`
	// Status: entries whose response.status is null, absent or negative.
	Status int `json:"status_unknown"`
	// Size: entries whose response.content.size is absent or negative.
	Size int `json:"size_unknown"`
	// BodiesAbsent: entries without content.text.
	BodiesAbsent int `json:"bodies_absent"`
	// BodiesUndecodable: entries whose base64 content.text does not decode.
	BodiesUndecodable int `json:"bodies_undecodable"`
	// BodiesTruncated: entries whose content.text decodes to fewer bytes
	// than content.size (BodyTruncated); BodiesSizeMismatch: to more.
	BodiesTruncated    int `json:"bodies_truncated"`
	BodiesSizeMismatch int `json:"bodies_size_mismatch"`
}

// Capture is a decoded HAR file.
type Capture struct {
	Version string `json:"version"`
	Creator string `json:"creator"`
	// Count is the number of elements of log.entries (resolved or not).
	Count      int          `json:"count"`
	Entries    []Entry      `json:"-"`
	Unresolved []Unresolved `json:"unresolved"`
	Unknowns   Unknowns     `json:"unknowns"`
}

func decodeFailed(msg string) *contract.Error {
	return contract.Errorf(contract.CodeDecodeFailed, "%s", msg).WithDetail("accepted_formats", []string{"har 1.2"})
}

// Parse decodes a HAR 1.2 document (see ParseContext).
func Parse(data []byte) (*Capture, error) { return ParseContext(context.Background(), data) }

// ParseContext decodes a HAR 1.2 document into a Capture holding every
// resolved entry (see Stream for the errors).
func ParseContext(ctx context.Context, data []byte) (*Capture, error) {
	var entries []Entry
	c, err := Stream(ctx, data, func(e *Entry) error {
		entries = append(entries, *e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.Entries = entries
	if c.Entries == nil {
		c.Entries = []Entry{}
	}
	return c, nil
}

// Stream decodes a HAR 1.2 document with encoding/json's streaming
// Decoder, passing each resolved entry of log.entries to fn in order (the
// *Entry is valid only during the call) and checking ctx every 1024
// entries, so memory is what fn keeps, not a decoded tree of the file.
// The returned Capture holds the log metadata, Unresolved, Unknowns and
// Count, and no Entries. A document that is not JSON, has no log.entries
// array or more than one is DECODE_FAILED; more than MaxEntries entries
// is LIMIT_EXCEEDED; a done ctx gives its contract error (CANCELLED or
// DEADLINE_EXCEEDED); an error from fn is returned as is. An individual
// entry that cannot be decoded, lacks request or response, or has a null
// or absent request.method is listed in Unresolved and the rest are kept.
func Stream(ctx context.Context, data []byte, fn func(*Entry) error) (*Capture, error) {
	c, err := stream(ctx, data, fn)
	if err == errNotHARDoc {
		// Say what was found: empty, UTF-16, truncated at byte N,
		// malformed at byte N, or JSON of another shape.
		if p := jsontext.Diagnose(data); p != nil {
			return nil, decodeFailed(p.Message("the HAR file")).WithDetail("problem", p.Kind).WithDetail("offset", p.Offset)
		}
		return nil, decodeFailed("the file is JSON but not a HAR document: no top-level object with a log object")
	}
	return c, err
}

// errNotHARDoc is stream's failure on text that is not a HAR document;
// Stream replaces it with the diagnosis of the text.
var errNotHARDoc = decodeFailed("the file is not a JSON HAR document")

func stream(ctx context.Context, data []byte, fn func(*Entry) error) (*Capture, error) {
	// RFC 8259 lets a parser ignore a UTF-8 byte-order mark.
	data, _ = jsontext.StripBOM(data)
	p := &parser{ctx: ctx, dec: json.NewDecoder(bytes.NewReader(data)), emit: fn, c: &Capture{Unresolved: []Unresolved{}}}
	dec := p.dec
	if err := expectDelim(dec, '{'); err != nil {
		return nil, errNotHAR()
	}
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return nil, errNotHAR()
		}
		if key != "log" {
			if err := skipValue(dec); err != nil {
				return nil, errNotHAR()
			}
			continue
		}
		if err := p.parseLog(); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, errNotHAR()
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errNotHAR()
	}
	if !p.seenEntries {
		return nil, decodeFailed("the JSON document has no log.entries array: not a HAR capture")
	}
	return p.c, nil
}

func errNotHAR() error { return errNotHARDoc }

type parser struct {
	ctx         context.Context
	dec         *json.Decoder
	emit        func(*Entry) error
	c           *Capture
	seenEntries bool
}

// parseLog reads the log object (a value that is not an object has no
// entries).
func (p *parser) parseLog() error {
	dec, c := p.dec, p.c
	tok, err := dec.Token()
	if err != nil {
		return errNotHAR()
	}
	if tok != json.Delim('{') {
		if d, ok := tok.(json.Delim); ok {
			if err := skipRest(dec, d); err != nil {
				return errNotHAR()
			}
		}
		return nil
	}
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return errNotHAR()
		}
		switch key {
		case "version":
			var v any
			if err := dec.Decode(&v); err != nil {
				return errNotHAR()
			}
			c.Version, _ = v.(string)
		case "creator":
			var cr struct {
				Name string `json:"name"`
			}
			if err := dec.Decode(&cr); err != nil {
				var te *json.UnmarshalTypeError
				if !errors.As(err, &te) {
					return errNotHAR()
				}
			}
			c.Creator = cr.Name
		case "entries":
			if err := p.parseEntries(); err != nil {
				return err
			}
		default:
			if err := skipValue(dec); err != nil {
				return errNotHAR()
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return errNotHAR()
	}
	return nil
}

func (p *parser) parseEntries() error {
	dec, c := p.dec, p.c
	tok, err := dec.Token()
	if err != nil {
		return errNotHAR()
	}
	if tok != json.Delim('[') {
		if d, ok := tok.(json.Delim); ok {
			if err := skipRest(dec, d); err != nil {
				return errNotHAR()
			}
		}
		return nil // not an array: no entries
	}
	if p.seenEntries {
		// Entries already passed on cannot be taken back.
		return decodeFailed("the document has more than one log.entries array: ambiguous HAR capture")
	}
	p.seenEntries = true
	for i := 0; dec.More(); i++ {
		if i%cancelEvery == 0 {
			if err := p.ctx.Err(); err != nil {
				return contract.AsError(err)
			}
		}
		if i >= MaxEntries {
			return contract.Errorf(contract.CodeLimitExceeded, "the capture has more than %d entries; at most %d are read", MaxEntries, MaxEntries).WithDetail("limit_entries", MaxEntries)
		}
		c.Count++
		var re rawEntry
		if err := dec.Decode(&re); err != nil {
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) {
				return errNotHAR()
			}
			// The value was read whole; only its shape is wrong.
			c.Unresolved = append(c.Unresolved, Unresolved{Index: i, Reason: ReasonShape})
			continue
		}
		if e := resolve(c, i, &re); e != nil {
			if err := p.emit(e); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return errNotHAR()
	}
	return nil
}

// resolve projects one decoded entry, or records it in c.Unresolved and
// returns nil.
func resolve(c *Capture, i int, re *rawEntry) *Entry {
	if re.Request == nil || re.Response == nil {
		c.Unresolved = append(c.Unresolved, Unresolved{Index: i, Reason: ReasonNoRequestResponse})
		return nil
	}
	e := Entry{Index: i, Started: re.StartedDateTime, URL: re.Request.URL, ResourceType: re.ResourceType, Status: re.Response.Status, MimeType: re.Response.Content.MimeType, Body: BodyAbsent}
	if e.ResourceType == "" {
		e.ResourceType = "unknown"
	}
	if e.Status != nil && *e.Status < 0 {
		// HAR 1.2 marks a value it does not have with -1 (sizes, time,
		// timings); a negative response.status is no HTTP status either
		// (RFC 9110 section 15: three digits), so it is unknown like
		// null, never a status of its own.
		e.Status = nil
	}
	if e.Status == nil {
		c.Unknowns.Status++
	}
	if s := re.Response.Content.Size; s != nil && *s >= 0 && *s < math.MaxInt64 {
		e.Size = strconv.FormatInt(int64(*s), 10)
	} else {
		c.Unknowns.Size++
	}
	if t := re.Response.Content.Text; t != nil {
		body := []byte(*t)
		ok := true
		of := DigestTextUTF8
		if re.Response.Content.Encoding == "base64" {
			b, err := base64.StdEncoding.DecodeString(*t)
			ok = err == nil
			body, of = b, DigestDecodedBase64
		}
		if ok {
			sum := sha256.Sum256(body)
			e.Body, e.BodySHA256, e.BodyDigestOf = BodyRetained, hex.EncodeToString(sum[:]), of
			// HAR 1.2: content.size is the length of the returned
			// content in bytes, and text is that content decoded; a
			// text of another length is not the response's body.
			if size, err := strconv.ParseInt(e.Size, 10, 64); err == nil && int64(len(body)) != size {
				e.BodyBytes = strconv.Itoa(len(body))
				if int64(len(body)) < size {
					e.Body, e.BodyDigestOf = BodyTruncated, "partial_"+of
					c.Unknowns.BodiesTruncated++
				} else {
					e.Body = BodySizeMismatch
					c.Unknowns.BodiesSizeMismatch++
				}
			}
		} else {
			// The text was read completely: its bytes are identified even
			// though they do not decode.
			sum := sha256.Sum256([]byte(*t))
			e.Body, e.TextSHA256, e.TextSize = BodyUndecodable, hex.EncodeToString(sum[:]), strconv.Itoa(len(*t))
			c.Unknowns.BodiesUndecodable++
		}
	} else {
		c.Unknowns.BodiesAbsent++
	}
	// HAR 1.2: time is the sum of the timings that apply; -1 is not a
	// HAR value for time but producers write it for "unknown".
	if re.Time != nil && *re.Time >= 0 && finite(*re.Time) {
		v := *re.Time
		e.TimeMS = &v
	} else {
		c.Unknowns.Time++
	}
	for k := range e.Timings {
		e.Timings[k] = math.NaN()
	}
	for k, v := range re.Timings {
		for pi, name := range timingPhases {
			if k == name && v != nil && *v >= 0 && finite(*v) {
				e.Timings[pi] = *v
			}
		}
	}
	if re.Request.Method == nil {
		// Its other facts were read and are counted above; only its
		// group is unknown.
		c.Unknowns.Method++
		c.Unresolved = append(c.Unresolved, Unresolved{Index: i, Reason: ReasonMethodUnknown})
		return nil
	}
	e.Method = *re.Request.Method
	if len(re.WebSocketMessages) > 0 || e.ResourceType == "websocket" || isWSURL(e.URL) {
		e.WebSocket = newInventory(re.WebSocketMessages)
	}
	return &e
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return errors.New("unexpected token")
	}
	return nil
}

func objectKey(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", errors.New("object key is not a string")
	}
	return s, nil
}

// skipValue reads and discards one JSON value.
func skipValue(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); ok {
		return skipRest(dec, d)
	}
	return nil
}

// skipRest discards the rest of the array or object opened by d.
func skipRest(dec *json.Decoder, d json.Delim) error {
	if d != '{' && d != '[' {
		return errors.New("unexpected delimiter")
	}
	depth := 1
	for depth > 0 {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}
