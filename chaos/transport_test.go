package main

import (
	"net/http"
	"testing"
)

// The pause-write nemesis holds only a first attempt: a retry may repeat
// an attempt that landed, which DynamoDB acknowledges from its idempotency
// token without evaluating its condition again.
func TestFirstAttempt(t *testing.T) {
	for header, want := range map[string]bool{
		"":                    true,
		"attempt=1":           true,
		"attempt=1; max=3":    true,
		"attempt=2; max=3":    false,
		"attempt=10; max=12":  false,
		"attempt=11; max=3":   false,
		"attempt=1; max=3; x": true,
	} {
		req, err := http.NewRequest(http.MethodPost, "http://localhost/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if header != "" {
			req.Header.Set("Amz-Sdk-Request", header)
		}
		if got := firstAttempt(req); got != want {
			t.Errorf("firstAttempt(%q) = %v, want %v", header, got, want)
		}
	}
}
