package contract

import "testing"

// retryable is true only where an unchanged retry can succeed: caller,
// permission and configuration failures need a change first.
func TestRetryableByCode(t *testing.T) {
	for _, tc := range []struct {
		code Code
		want bool
	}{
		{CodeBusy, true},
		{CodeTimeout, true},
		{CodeBackendUnavailable, true},
		{CodeOutcomeUnknown, true},
		{CodeActivityConflict, true}, // ends with Log view or the recording
		{CodeInvalidArgument, false},
		{CodeAccessDenied, false},
		{CodePermissionDenied, false},
		{CodeUnsupported, false},
		{CodeProviderUnavailable, false},
		{CodeProcessExited, false},
		{CodeReferenceInvalid, false},
		{CodeCursorInvalid, false},
		{CodeStateConflict, false},
		{CodeUnsupportedFormat, false},
	} {
		if got := Errorf(tc.code, "x").Retryable; got != tc.want {
			t.Errorf("%s: retryable %v, want %v", tc.code, got, tc.want)
		}
	}
	if Errorf(CodeInternalError, "x").Permanent().Retryable {
		t.Error("Permanent left retryable set")
	}
	if b, isErr := Marshal(nil, nil); !isErr || string(b) == "" || Errorf(CodeInternalError, "x").Retryable != true {
		t.Errorf("no result: %s", b)
	}
}
