// Package clockutil is the clock dynalease takes, and a fake one for tests.
//
// Every wait in dynalease (a poll, a heartbeat, a renewal, a lease's end, a
// request's timeout, a scheduled slot) goes through the Clock given in its
// Config; nil means the machine's real clock. A test that gives the
// library a Fake instead moves time itself, so that timelines of minutes
// run in microseconds and never depend on the machine's speed.
//
// A Fake knows when the library is about to wait: each of the library's
// loops tells the clock just before it blocks on it, its timers set (see
// Fake.WaitBlocked). A test waits for that, then steps the clock, and never
// races the code it drives.
package clockutil
