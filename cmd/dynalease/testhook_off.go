//go:build !dynalease_testhook

package main

import (
	"net/http"
	"time"
)

// The test hooks (see testhook_on.go) do nothing in a normal build.

func pauseBeforeStart() {}

func groupGoneWait() time.Duration { return defaultGroupGoneWait }

func groupNeverGone() bool { return false }

func describeTableHook() http.RoundTripper { return nil }
