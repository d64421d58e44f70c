// Package contract defines the evidence contract that every inquest tool
// result follows: the success and error envelopes, the error codes, coverage
// and opaque cursors (docs/errors.md and
// docs/agents.md).
package contract

import (
	"context"
	"errors"
	"fmt"
)

// Code is an application error code carried in error.code of a failed tool
// result. The set is listed in docs/errors.md, "The codes".
type Code string

// Error codes shared by every toolset.
const (
	CodeOutcomeUnknown       Code = "OUTCOME_UNKNOWN"
	CodeResourceLimit        Code = "RESOURCE_LIMIT"
	CodeCollectionFailed     Code = "COLLECTION_FAILED"
	CodeInvalidArgument      Code = "INVALID_ARGUMENT"
	CodeBackendUnavailable   Code = "BACKEND_UNAVAILABLE"
	CodeAccessDenied         Code = "ACCESS_DENIED"
	CodeIdentityUnverifiable Code = "IDENTITY_UNVERIFIABLE"
	CodeProcessExited        Code = "PROCESS_EXITED"
	CodeIdentityChanged      Code = "IDENTITY_CHANGED"
	CodeActivityConflict     Code = "ACTIVITY_CONFLICT"
	CodeUnsupported          Code = "UNSUPPORTED"
	CodeBusy                 Code = "BUSY"
	CodeTimeout              Code = "TIMEOUT"
	CodeCancelled            Code = "CANCELLED"
	CodeCursorInvalid        Code = "CURSOR_INVALID"
	CodeReferenceInvalid     Code = "REFERENCE_INVALID"
	CodeResultTooLarge       Code = "RESULT_TOO_LARGE"
	CodeStateConflict        Code = "STATE_CONFLICT"
	CodePermissionDenied     Code = "PERMISSION_DENIED"
	CodeOperationUnknown     Code = "OPERATION_UNKNOWN"
	CodeInternalError        Code = "INTERNAL_ERROR"
	CodeExportFailed         Code = "EXPORT_FAILED"
)

// Error codes needed by the perf and bin toolsets.
const (
	CodeUnsupportedFormat   Code = "UNSUPPORTED_FORMAT"
	CodeDecodeFailed        Code = "DECODE_FAILED"
	CodeInputChanged        Code = "INPUT_CHANGED"
	CodeProviderUnavailable Code = "PROVIDER_UNAVAILABLE"
	CodeExecutionFailed     Code = "EXECUTION_FAILED"
	CodeLimitExceeded       Code = "LIMIT_EXCEEDED"
	CodeEvidenceNotFound    Code = "EVIDENCE_NOT_FOUND"
	CodeRepositoryCorrupt   Code = "REPOSITORY_CORRUPT"
	// CodeRepositoryIO is an evidence store read or write that failed in
	// the operating system (EIO, EROFS, EMFILE ...; details.cause is the
	// errno name and details.path the file or directory).
	CodeRepositoryIO Code = "REPOSITORY_IO_FAILED"
	// CodeAnalysisExpired is an analysis_id this process issued whose
	// session analysis is no longer kept (evicted by newer ones); rerun
	// the analysis. An id it never issued is REFERENCE_INVALID.
	CodeAnalysisExpired Code = "ANALYSIS_EXPIRED"
	// CodeRepositoryFormat is an evidence store, or a manifest in it,
	// written in a format version this inquest does not read (a newer
	// inquest wrote it): details.format_version and
	// details.supported_format_version.
	CodeRepositoryFormat Code = "REPOSITORY_FORMAT_UNSUPPORTED"
)

// AllCodes lists every code in a stable order (docs/errors.md); the output
// schema publishes their shape, upper-case words joined by "_".
var AllCodes = []Code{
	CodeOutcomeUnknown, CodeResourceLimit, CodeCollectionFailed, CodeInvalidArgument,
	CodeBackendUnavailable, CodeAccessDenied, CodeIdentityUnverifiable, CodeProcessExited,
	CodeIdentityChanged, CodeActivityConflict, CodeUnsupported, CodeBusy, CodeTimeout,
	CodeCancelled, CodeCursorInvalid, CodeReferenceInvalid, CodeResultTooLarge,
	CodeStateConflict, CodePermissionDenied, CodeOperationUnknown, CodeInternalError,
	CodeExportFailed, CodeUnsupportedFormat, CodeDecodeFailed, CodeInputChanged,
	CodeProviderUnavailable, CodeExecutionFailed, CodeLimitExceeded, CodeEvidenceNotFound,
	CodeRepositoryCorrupt, CodeRepositoryIO, CodeAnalysisExpired, CodeRepositoryFormat,
}

// retryableByDefault says whether an unchanged call may succeed on retry
// (false for INVALID_ARGUMENT and other caller errors; docs/errors.md).
// TIMEOUT is retryable by default: a deadline the caller did not set (a
// job or request deadline: a less loaded host may finish) or a wait for an
// event that may still happen (wait_condition's timeout_ms). A limit on
// work the call set (an analysis's limits.timeout_seconds), which the
// unchanged call repeats, is marked Permanent where it is built.
// Permission and configuration failures (ACCESS_DENIED, PERMISSION_DENIED,
// UNSUPPORTED, PROVIDER_UNAVAILABLE: a missing tool, store or setting) are
// not retryable: only a change by the user can make the call succeed.
// Constructors of a retryable code whose cause is permanent mark it with
// Permanent.
func retryableByDefault(c Code) bool {
	switch c {
	case CodeBusy, CodeTimeout, CodeBackendUnavailable, CodeOutcomeUnknown,
		CodeCollectionFailed, CodeResourceLimit, CodeInternalError, CodeRepositoryIO,
		// The activity (Log view, an active recording) ends by itself or
		// by the user, and the unchanged call then succeeds.
		CodeActivityConflict:
		return true
	}
	return false
}

// Permanent returns e with Retryable false: the same call fails the same
// way (a deterministic failure, a version or configuration mismatch).
func (e *Error) Permanent() *Error {
	e.Retryable = false
	return e
}

// Error is the error object of a failed tool result, returned under "error".
// It implements the error interface so handlers return it directly. Message
// must never echo rejected input, environment values, command lines or host
// paths the caller did not supply.
type Error struct {
	Code      Code   `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
	// Field is a JSON Pointer into the call's arguments (schema failures only).
	Field string `json:"field,omitempty"`
	// Constraint is a JSON Pointer into the tool's input schema.
	Constraint string `json:"constraint,omitempty"`
	// Expected is copied from the input schema at Constraint, never from input.
	Expected any `json:"expected,omitempty"`
	// Details holds code-specific safe facts (accepted formats, retained ids...).
	Details map[string]any `json:"details,omitempty"`
	// NextAction is the exact call that recovers, or nil.
	NextAction *Action `json:"next_action"`
}

// Error implements error as "CODE: message".
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf builds an *Error with code, a formatted safe message and the code's
// default retryable flag.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retryable: retryableByDefault(code)}
}

// WithDetail returns e with Details[key] = value set.
func (e *Error) WithDetail(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// AsError converts any error into an *Error: an *Error anywhere in the chain
// is returned as is; context cancellation maps to CANCELLED, a deadline to
// TIMEOUT; anything else is INTERNAL_ERROR with a generic message (the
// original text may hold paths and is not exposed).
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Errorf(CodeCancelled, "the request was cancelled")
	case errors.Is(err, context.DeadlineExceeded):
		return Errorf(CodeTimeout, "the request deadline passed")
	}
	return Errorf(CodeInternalError, "internal error")
}

// CodeOf returns the code of err when it is (or wraps) an *Error, or "".
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
