package gate

import "testing"

// FuzzParseApproval: approval files are refused or accepted without panicking, and an
// accepted one has every required field.
func FuzzParseApproval(f *testing.F) {
	f.Add([]byte("approver: a\ntool: t.x\nversion: v1.2.3\napproved_at: 2026-01-02T03:04:05Z\n"))
	f.Add([]byte("approver: [a\n"))
	f.Add([]byte("approved_at: 0001-01-01T00:00:00Z\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseApproval(data, "f.yaml")
		if err == nil && (a.Approver == "" || a.Tool == "" || a.Version == "" || a.ApprovedAt.IsZero()) {
			t.Fatalf("incomplete approval accepted: %+v", a)
		}
	})
}
