package lock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/lock"
	"github.com/dynalease/dynalease/resourcelock"
)

// Guarded writes (Lock.Guard) and fenced writes (FenceWith) against
// DynamoDB Local. The application's items live in a table of their own
// (partition key "id"); the lock row in the lock table.

// fgItem is an application item: id, writer, seq.
func fgItem(id, writer string, seq int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"id": fgS(id), "writer": fgS(writer), "seq": fgN(seq)}
}

// fgKey is the key of the application item id.
func fgKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"id": fgS(id)}
}

// put is a guarded Put of item, admitted whatever the item holds.
func (e *fgEnv) put(item map[string]types.AttributeValue) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(e.data), Item: item}}
}

// bump is a guarded Update of item id to writer and seq, conditioned on the
// item's seq being wantSeq.
func (e *fgEnv) bump(id, writer string, wantSeq, seq int64) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(e.data),
		Key:                       fgKey(id),
		UpdateExpression:          aws.String("SET #w = :w, #s = :s"),
		ConditionExpression:       aws.String("#s = :want"),
		ExpressionAttributeNames:  map[string]string{"#w": "writer", "#s": "seq"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":w": fgS(writer), ":s": fgN(seq), ":want": fgN(wantSeq)},
	}}
}

// wantItem checks the application item id: its writer and seq, or that it
// is absent when writer is "".
func (e *fgEnv) wantItem(what, id, writer string, seq int64) {
	e.t.Helper()
	it := e.dataItem(id)
	switch {
	case writer == "" && it != nil:
		e.t.Errorf("%s: item %q exists (%v), want none", what, id, it)
	case writer == "":
	case it == nil:
		e.t.Errorf("%s: item %q is missing, want writer %q seq %d", what, id, writer, seq)
	case fgStr(it, "writer") != writer || fgNum(e.t, it, "seq") != seq:
		e.t.Errorf("%s: item %q has writer %q seq %d, want %q %d", what, id, fgStr(it, "writer"), fgNum(e.t, it, "seq"), writer, seq)
	}
}

// wantTransactions checks how many TransactWriteItems c sent since its last
// Reset, and starts counting again.
func (c *fgClient) wantTransactions(t *testing.T, what string, want int) {
	t.Helper()
	if got := c.ft.Count("TransactWriteItems"); got != want {
		t.Errorf("%s: %d TransactWriteItems sent, want %d", what, got, want)
	}
	c.ft.Reset()
}

func TestDynamoDBGuardCommitsPutUpdateDeleteAndConditionCheck(t *testing.T) {
	e := newFGEnv(t)
	a := e.newClient("a")
	e.putRaw(e.data, fgItem("upd", "setup", 1))
	e.putRaw(e.data, fgItem("del", "setup", 1))
	e.putRaw(e.data, fgItem("chk", "setup", 7))
	l := a.mustAcquire(t, "g")
	rvn, tok := l.RVN(), l.Token()
	a.ft.Reset()

	err := l.GuardItems(t.Context(),
		e.put(fgItem("new", a.Identity(), 1)),
		e.bump("upd", a.Identity(), 1, 2),
		types.TransactWriteItem{Delete: &types.Delete{
			TableName:           aws.String(e.data),
			Key:                 fgKey("del"),
			ConditionExpression: aws.String("attribute_exists(id)"),
		}},
		types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName:                 aws.String(e.data),
			Key:                       fgKey("chk"),
			ConditionExpression:       aws.String("seq = :seven"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":seven": fgN(7)},
		}},
	)
	if err != nil {
		t.Fatalf("Guard by the holder: %v", err)
	}
	e.wantItem("guarded Put", "new", a.Identity(), 1)
	e.wantItem("guarded Update", "upd", a.Identity(), 2)
	e.wantItem("guarded Delete", "del", "", 0)
	e.wantItem("guarded ConditionCheck", "chk", "setup", 7)
	if got := a.ft.Counts(); got["TransactWriteItems"] != 1 || len(got) != 1 {
		t.Errorf("Guard sent %v, want one TransactWriteItems and nothing else", got)
	}
	// The guard only checks the lock row; it does not write it.
	row := e.lockRow("g")
	if fgStr(row, "recordVersionNumber") != rvn || l.RVN() != rvn || l.Token() != tok || !l.IsHeld() {
		t.Errorf("the guarded write changed the lock: row RVN %q, lock RVN %q (was %q), token %#x (was %#x), held %v",
			fgStr(row, "recordVersionNumber"), l.RVN(), rvn, l.Token(), tok, l.IsHeld())
	}
}

// fgCanceled is the body of a TransactionCanceledException with the given
// cancellation reason codes (none at all when codes is nil), in DynamoDB's
// JSON protocol.
func fgCanceled(codes ...string) string {
	type reason struct {
		Code    string
		Message string `json:",omitempty"`
	}
	body := struct {
		Type    string   `json:"__type"`
		Message string   `json:"Message"`
		Reasons []reason `json:"CancellationReasons,omitempty"`
	}{Type: faulthttp.ErrorNamespace + "TransactionCanceledException", Message: fmt.Sprintf("Transaction cancelled, please refer cancellation reasons for specific reasons %v", codes)}
	for _, c := range codes {
		r := reason{Code: c}
		switch c {
		case "TransactionConflict":
			r.Message = "Transaction is ongoing for the item"
		case "ThrottlingError":
			r.Message = "Throughput exceeds the current capacity for one or more global secondary indexes"
		}
		body.Reasons = append(body.Reasons, r)
	}
	b, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestDynamoDBGuardClassifiesEveryOutcome(t *testing.T) {
	e := newFGEnv(t)
	a := e.newClient("a")
	b := e.newClient("b")
	l := a.mustAcquire(t, "g")
	other := b.mustAcquire(t, "other")
	ctx := t.Context()
	stillHeld := func(t *testing.T, what string) {
		t.Helper()
		if !l.IsHeld() || l.Err() != nil {
			t.Fatalf("%s: the lock no longer counts as held (err %v)", what, l.Err())
		}
	}
	seq := int64(0)
	e.putRaw(e.data, fgItem("acct", "setup", seq))

	t.Run("the caller's condition fails", func(t *testing.T) {
		e := e.sub(t)
		// Nine items: the failing one first, in the middle, last.
		for _, bad := range []int{0, 4, 8} {
			items := make([]types.TransactWriteItem, 9)
			for i := range items {
				items[i] = e.put(fgItem(fmt.Sprintf("cond-%d-%d", bad, i), a.Identity(), 1))
			}
			items[bad] = e.bump("acct", a.Identity(), seq+100, seq+1) // wrong expected seq
			a.ft.Reset()
			err := l.GuardItems(ctx, items...)
			var ice *dynamodbstore.ItemConditionError
			if !errors.As(err, &ice) || ice.Index != bad {
				t.Fatalf("Guard with item %d's condition failing = %v, want an *ItemConditionError with Index %d", bad, err, bad)
			}
			if !errors.Is(err, resourcelock.ErrConflict) || errors.Is(err, dynalease.ErrLost) || errors.Is(err, resourcelock.ErrGuardLost) {
				t.Errorf("item %d: %v matches the wrong errors", bad, err)
			}
			a.wantTransactions(t, fmt.Sprintf("item %d's condition failing", bad), 1)
			for i := range items {
				if i != bad {
					e.wantItem("a write of a cancelled transaction", fmt.Sprintf("cond-%d-%d", bad, i), "", 0)
				}
			}
			e.wantItem("the item whose condition failed", "acct", "setup", seq)
			stillHeld(t, fmt.Sprintf("after item %d's condition failed", bad))
		}
	})

	t.Run("refused before any request", func(t *testing.T) {
		e := e.sub(t)
		lockTable := aws.String(e.locks)
		lockKey := map[string]types.AttributeValue{"key": fgS("g")}
		many := make([]types.TransactWriteItem, 100) // DynamoDB's limit on one TransactWriteItems
		for i := range many {
			many[i] = e.put(fgItem(fmt.Sprintf("many-%d", i), a.Identity(), 1))
		}
		for _, c := range []struct {
			what  string
			items []types.TransactWriteItem
		}{
			{"100 items (99 and the lock check fill a transaction)", many},
			{"a Put of the lock row", []types.TransactWriteItem{e.put(fgItem("x", "a", 1)),
				{Put: &types.Put{TableName: lockTable, Item: map[string]types.AttributeValue{"key": fgS("g"), "ownerName": fgS("me")}}}}},
			{"an Update of the lock row", []types.TransactWriteItem{{Update: &types.Update{TableName: lockTable, Key: lockKey,
				UpdateExpression: aws.String("SET ownerName = :o"), ExpressionAttributeValues: map[string]types.AttributeValue{":o": fgS("me")}}}}},
			{"a Delete of the lock row", []types.TransactWriteItem{{Delete: &types.Delete{TableName: lockTable, Key: lockKey}}}},
			{"a ConditionCheck of the lock row", []types.TransactWriteItem{{ConditionCheck: &types.ConditionCheck{TableName: lockTable, Key: lockKey,
				ConditionExpression: aws.String("attribute_exists(ownerName)")}}}},
			{"an item with two operations", []types.TransactWriteItem{{Put: e.put(fgItem("y", "a", 1)).Put, Delete: &types.Delete{TableName: aws.String(e.data), Key: fgKey("y")}}}},
			{"an item with no operation", []types.TransactWriteItem{{}}},
		} {
			a.ft.Reset()
			err := l.GuardItems(ctx, c.items...)
			if !errors.Is(err, dynalease.ErrInvalid) {
				t.Errorf("Guard with %s = %v, want dynalease.ErrInvalid", c.what, err)
			}
			a.wantTransactions(t, c.what, 0)
			stillHeld(t, c.what)
		}
		e.wantItem("a refused guard", "x", "", 0)
		e.wantItem("a refused guard", "many-0", "", 0)

		a.ft.Reset()
		if err := l.GuardItems(ctx, many[:9]...); err != nil {
			t.Fatalf("Guard with 9 items: %v", err)
		}
		a.wantTransactions(t, "9 items", 1)
		e.wantItem("9 items", "many-8", a.Identity(), 1)
		// Other rows of the lock table are the caller's to check: a guard
		// by two locks.
		err := l.GuardItems(ctx, e.bump("acct", a.Identity(), seq, seq+1), types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: lockTable, Key: map[string]types.AttributeValue{"key": fgS("other")},
			ConditionExpression:       aws.String("ownerName = :b AND acquisitionId = :acq"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":b": fgS(b.Identity()), ":acq": fgS(fgStr(e.lockRow("other"), "acquisitionId"))},
		}})
		if err != nil {
			t.Fatalf("Guard with a check of another lock's row: %v", err)
		}
		seq++
		e.wantItem("a guard by two locks", "acct", a.Identity(), seq)
	})

	t.Run("transaction conflicts are retried", func(t *testing.T) {
		e := e.sub(t)
		// Twice cancelled by a conflict on the lock row (as with a
		// heartbeat landing at the same moment), then through.
		h := a.ft.Add(faulthttp.Rule{Op: "TransactWriteItems", Times: 2,
			Fault: faulthttp.Status(http.StatusBadRequest, fgCanceled("TransactionConflict", "None"))})
		defer h.Remove()
		a.ft.Reset()
		if err := l.GuardItems(ctx, e.bump("acct", a.Identity(), seq, seq+1)); err != nil {
			t.Fatalf("Guard after two conflicts: %v", err)
		}
		seq++
		a.wantTransactions(t, "two conflicts, then through", 3)
		e.wantItem("a guard retried after conflicts", "acct", a.Identity(), seq)
		stillHeld(t, "after conflicts")
	})

	t.Run("conflicts that persist", func(t *testing.T) {
		e := e.sub(t)
		h := a.ft.Add(faulthttp.Rule{Op: "TransactWriteItems",
			Fault: faulthttp.Status(http.StatusBadRequest, fgCanceled("None", "TransactionConflict"))})
		defer h.Remove()
		a.ft.Reset()
		err := l.GuardItems(ctx, e.bump("acct", a.Identity(), seq, seq+1))
		if !errors.Is(err, resourcelock.ErrContention) || errors.Is(err, dynalease.ErrLost) {
			t.Fatalf("Guard that keeps conflicting = %v, want resourcelock.ErrContention", err)
		}
		if n := a.ft.Count("TransactWriteItems"); n < 2 {
			t.Errorf("a conflicting guard was sent %d times: not retried", n)
		}
		h.Remove()
		e.wantItem("a guard that kept conflicting", "acct", a.Identity(), seq)
		stillHeld(t, "after persistent conflicts")
	})

	t.Run("cancelled without reasons, the lock intact", func(t *testing.T) {
		e := e.sub(t)
		// Without reasons, Guard reads the lock row to tell a lost lock
		// from a failed condition of the caller's.
		h := a.ft.Add(faulthttp.Rule{Op: "TransactWriteItems", Times: 1,
			Fault: faulthttp.Status(http.StatusBadRequest, fgCanceled())})
		defer h.Remove()
		a.ft.Reset()
		err := l.GuardItems(ctx, e.bump("acct", a.Identity(), seq, seq+1))
		var ice *dynamodbstore.ItemConditionError
		if !errors.As(err, &ice) || ice.Index != -1 || errors.Is(err, dynalease.ErrLost) {
			t.Fatalf("Guard cancelled without reasons = %v, want an *ItemConditionError with Index -1", err)
		}
		if got := a.ft.Counts(); got["TransactWriteItems"] != 1 || got["GetItem"] != 1 {
			t.Errorf("requests %v, want one TransactWriteItems and one GetItem", got)
		}
		stillHeld(t, "after a cancellation without reasons")
	})

	t.Run("a released lock refuses without a request", func(t *testing.T) {
		e := e.sub(t)
		if err := other.Release(ctx); err != nil {
			t.Fatal(err)
		}
		b.ft.Reset()
		err := other.GuardItems(ctx, e.put(fgItem("after-release", b.Identity(), 1)))
		if !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("Guard after Release = %v, want ErrNotHeld", err)
		}
		b.wantTransactions(t, "Guard after Release", 0)
		e.wantItem("Guard after Release", "after-release", "", 0)
	})
}

// TestDynamoDBGuardWithinTheDefaultItemLimit: by default Guard takes as many
// items as DynamoDB allows in one transaction beside the lock check (99 of
// 100), and refuses one more before any request, naming the limit, instead
// of letting the server reject it with an unclassified ValidationException.
func TestDynamoDBGuardWithinTheDefaultItemLimit(t *testing.T) {
	e := newFGEnv(t)
	a := e.newClient("a")
	l := a.mustAcquire(t, "g")
	items := func(n int) []types.TransactWriteItem {
		out := make([]types.TransactWriteItem, n)
		for i := range out {
			out[i] = e.put(fgItem(fmt.Sprintf("lim-%d-%d", n, i), a.Identity(), 1))
		}
		return out
	}

	a.ft.Reset()
	if err := l.GuardItems(t.Context(), items(99)...); err != nil {
		t.Fatalf("Guard of 99 items: %v", err)
	}
	if sent := a.ft.Count("TransactWriteItems"); sent != 1 {
		t.Errorf("Guard of 99 items sent %d transactions, want 1", sent)
	}
	for _, i := range []int{0, 50, 98} {
		e.wantItem("a write of the 99-item guard", fmt.Sprintf("lim-99-%d", i), a.Identity(), 1)
	}

	a.ft.Reset()
	err := l.GuardItems(t.Context(), items(100)...)
	if !errors.Is(err, dynalease.ErrInvalid) {
		t.Fatalf("Guard of 100 items = %v, want dynalease.ErrInvalid", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "at most 99") || !strings.Contains(msg, "100") {
		t.Errorf("the refusal of 100 items does not name the limit: %q", msg)
	}
	if sent := a.ft.Count("TransactWriteItems"); sent != 0 {
		t.Errorf("Guard of 100 items sent %d transactions, want none", sent)
	}
	e.wantItem("a write of the refused 100-item guard", "lim-100-0", "", 0)
}

// TestDynamoDBGuardCancelledByThrottlingIsNotTheCallersCondition: a
// transaction cancelled for a reason that is neither a failed condition nor
// a conflict (here ThrottlingError on the caller's item, as DynamoDB
// reports when one item's partition is throttled) must not be reported as
// the failure of the caller's own condition: the server did give reasons,
// and none of them is ConditionalCheckFailed.
func TestDynamoDBGuardCancelledByThrottlingIsNotTheCallersCondition(t *testing.T) {
	e := newFGEnv(t)
	a := e.newClient("a")
	l := a.mustAcquire(t, "g")
	e.putRaw(e.data, fgItem("acct", "setup", 0))
	h := a.ft.Add(faulthttp.Rule{Op: "TransactWriteItems", Times: 1,
		Fault: faulthttp.Status(http.StatusBadRequest, fgCanceled("None", "ThrottlingError"))})
	defer h.Remove()
	err := l.GuardItems(t.Context(), e.bump("acct", a.Identity(), 0, 1))
	if err == nil {
		t.Fatal("a cancelled transaction reported success")
	}
	var ice *dynamodbstore.ItemConditionError
	if errors.As(err, &ice) || errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("a transaction cancelled by ThrottlingError is reported as the caller's own condition failing: %v", err)
	}
	if errors.Is(err, dynalease.ErrLost) || !l.IsHeld() {
		t.Fatalf("throttling was taken for a lost lock: %v", err)
	}
}

// TestDynamoDBGuardRidesOutConflictsWithItsOwnHeartbeats runs guarded
// writes back to back on a lock whose background heartbeats rewrite its row
// every 50 ms: none may be taken for a lost lock, every one must commit,
// and the lock must stay held throughout.
func TestDynamoDBGuardRidesOutConflictsWithItsOwnHeartbeats(t *testing.T) {
	e := newFGEnv(t)
	a := e.newClient("a", lock.WithHeartbeatPeriod(50*time.Millisecond), lock.WithRequestTimeout(300*time.Millisecond))
	l := a.mustAcquire(t, "g")
	e.putRaw(e.data, map[string]types.AttributeValue{"id": fgS("counter"), "n": fgN(0)})
	rvn := l.RVN()
	a.ft.Reset()

	// Three writers, back to back, until twenty heartbeats have run beside
	// them (about a second; longer on a busy machine, which delays
	// heartbeats).
	const workers, heartbeats = 3, 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	var attempted, committed, conflicts int
	giveUp := time.Now().Add(fgPatient)
	running := func() bool { return a.ft.Count("UpdateItem") < heartbeats && time.Now().Before(giveUp) }
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for running() {
				err := l.GuardItems(t.Context(), types.TransactWriteItem{Update: &types.Update{
					TableName:                 aws.String(e.data),
					Key:                       fgKey("counter"),
					UpdateExpression:          aws.String("ADD n :one"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":one": fgN(1)},
				}})
				mu.Lock()
				attempted++
				switch {
				case err == nil:
					committed++
				case errors.Is(err, dynalease.ErrLost), errors.Is(err, resourcelock.ErrGuardLost):
					t.Errorf("a guarded write racing the lock's own heartbeats was taken for a lost lock: %v", err)
				case errors.Is(err, resourcelock.ErrContention):
					conflicts++ // allowed, nothing applied
				default:
					t.Errorf("guarded write: %v", err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	counts := a.ft.Counts()
	if got := fgNum(t, e.dataItem("counter"), "n"); got != int64(committed) {
		t.Errorf("counter is %d after %d committed guarded writes", got, committed)
	}
	if committed < attempted*9/10 {
		t.Errorf("only %d of %d guarded writes committed (%d gave up on conflicts)", committed, attempted, conflicts)
	}
	if counts["UpdateItem"] < heartbeats {
		t.Errorf("only %d heartbeats ran alongside the guarded writes in %v", counts["UpdateItem"], fgPatient)
	}
	if !l.IsHeld() || l.Err() != nil || l.RVN() == rvn {
		t.Errorf("lock held %v, err %v, RVN moved %v: want held, no error, renewed", l.IsHeld(), l.Err(), l.RVN() != rvn)
	}
	t.Logf("%d guarded writes: %d committed, %d gave up on conflicts; %d TransactWriteItems (retries: %d), %d heartbeats (UpdateItem), %d reads",
		attempted, committed, conflicts, counts["TransactWriteItems"], counts["TransactWriteItems"]-attempted, counts["UpdateItem"], counts["GetItem"])
}

// fgFenced writes item id to writer with a fence of token: a plain
// UpdateItem (no transaction, no lock check) conditioned by FenceWith, as a
// resource outside the lock's reach would be written.
func fgFenced(t *testing.T, e *fgEnv, id, writer string, token int64) error {
	t.Helper()
	f, err := dynamodbstore.FenceWith("fence", token)
	if err != nil {
		t.Fatalf("FenceWith(%d): %v", token, err)
	}
	names, values := f.Merge(map[string]string{"#w": "writer"}, map[string]types.AttributeValue{":w": fgS(writer)})
	_, err = e.raw.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(e.data),
		Key:                       fgKey(id),
		UpdateExpression:          aws.String("SET #w = :w, " + f.Set),
		ConditionExpression:       aws.String(f.Condition),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	return err
}

func TestDynamoDBFenceWithAdmitsEqualAndHigherTokensOnly(t *testing.T) {
	e := newFGEnv(t)
	a, b := e.newClient("a"), e.newClient("b")
	ctx := t.Context()
	la := a.mustAcquire(t, "f")
	low := la.Token()
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lb := b.mustAcquire(t, "f")
	mid := lb.Token()
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lc := a.mustAcquire(t, "f", lock.WithDeleteOnRelease())
	if err := lc.Release(ctx); err != nil {
		t.Fatal(err)
	}
	ld := b.mustAcquire(t, "f") // over a deleted row: a new generation
	high := ld.Token()
	if !(low < mid && mid < high) {
		t.Fatalf("tokens %#x, %#x, %#x do not grow", low, mid, high)
	}

	fence := func(what, writer string, token int64, admitted bool) {
		t.Helper()
		err := fgFenced(t, e, "res", writer, token)
		switch {
		case admitted && err != nil:
			t.Fatalf("%s (token %#x): %v, want admitted", what, token, err)
		case !admitted && !fgConditionFailed(err):
			t.Fatalf("%s (token %#x): %v, want refused by its condition", what, token, err)
		}
		if got := fgNum(t, e.dataItem("res"), "fence"); admitted && got != token {
			t.Fatalf("%s: fence is %#x after an admitted write with %#x", what, got, token)
		}
	}
	fence("first write, no fence yet", "b", mid, true)
	fence("the same token again", "b2", mid, true)
	fence("a lower token", "a", low, false)
	fence("a higher token from a new generation", "b3", high, true)
	fence("the middle token after the higher one", "b", mid, false)
	fence("the lowest token after the higher one", "a", low, false)
	if got := fgStr(e.dataItem("res"), "writer"); got != "b3" {
		t.Fatalf("resource written by %q, want the holder of the highest token", got)
	}

	// A fenced Put through the fence's Item and Condition.
	f, err := dynamodbstore.FenceWith("fence", mid)
	if err != nil {
		t.Fatal(err)
	}
	names, values := f.Merge(nil, nil)
	_, err = e.raw.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(e.data),
		Item:                      f.Item(fgItem("res", "stale-put", 9)),
		ConditionExpression:       aws.String(f.Condition),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if !fgConditionFailed(err) {
		t.Fatalf("a fenced Put with a lower token = %v, want refused", err)
	}
	e.wantItem("a refused fenced Put", "res", "b3", 0)
}

// TestDynamoDBPausedHolderCannotCommit is the case guarded and fenced
// writes exist for. Holder A runs on a fake clock that never moves, so to
// A no time passes at all: it never heartbeats and it still believes it
// holds the lock. On the real DynamoDB Local, B (real clock) sees A's row
// unchanged for A's lease and takes over. A, still sure it holds, then
// writes: its guarded write must be refused by the server with nothing
// applied and the lock must then report lost; its fenced write to an
// outside resource must be refused after B's. B's writes commit.
func TestDynamoDBPausedHolderCannotCommit(t *testing.T) {
	e := newFGEnv(t)
	const leaseA = time.Second
	frozen := clocktesting.NewFakeClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	a := e.newClient("a", lock.WithClock(frozen), lock.WithLeaseDuration(leaseA),
		lock.WithHeartbeatPeriod(200*time.Millisecond), lock.WithRequestTimeout(200*time.Millisecond))
	// B without background heartbeats: a heartbeat of B landing while A's
	// transaction runs could cancel it with a TransactionConflict, whose
	// retry would wait on A's clock, which never moves.
	b := e.newClient("b")
	ctx := t.Context()

	la := a.mustAcquire(t, "ledger-lock")
	tokA := la.Token()
	if err := la.GuardItems(ctx, e.put(fgItem("ledger", a.Identity(), 1))); err != nil {
		t.Fatalf("A's guarded write while it holds: %v", err)
	}
	if err := fgFenced(t, e, "ext", a.Identity(), tokA); err != nil {
		t.Fatalf("A's fenced write while it holds: %v", err)
	}
	rvnA := la.RVN()

	began := time.Now()
	lb := b.mustAcquire(t, "ledger-lock")
	if took := time.Since(began); took < leaseA {
		t.Fatalf("B took the lock after %v, before A's lease of %v", took, leaseA)
	}
	tokB := lb.Token()
	if tokB <= tokA {
		t.Fatalf("B's token %#x is not above A's %#x", tokB, tokA)
	}
	if la.RVN() != rvnA {
		t.Fatal("A heartbeated on a clock that does not move")
	}
	if err := lb.GuardItems(ctx, e.bump("ledger", b.Identity(), 1, 2)); err != nil {
		t.Fatalf("B's guarded write: %v", err)
	}
	if err := fgFenced(t, e, "ext", b.Identity(), tokB); err != nil {
		t.Fatalf("B's fenced write: %v", err)
	}

	// A wakes up, as far as it can tell, an instant later.
	if !la.IsHeld() || la.Err() != nil {
		t.Fatalf("A on its frozen clock should still believe it holds the lock (held %v, err %v)", la.IsHeld(), la.Err())
	}
	if err := fgFenced(t, e, "ext", a.Identity(), tokA); !fgConditionFailed(err) {
		t.Errorf("A's fenced write after B's = %v, want refused by the fence", err)
	}
	e.wantItem("the fenced resource", "ext", b.Identity(), 0)
	a.ft.Reset()
	err := la.GuardItems(ctx,
		e.put(fgItem("ledger", a.Identity(), 3)), // unconditional: only the lock check can stop it
		e.put(fgItem("a-only", a.Identity(), 1)),
		types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(e.data), Key: fgKey("ext")}},
	)
	if !errors.Is(err, dynalease.ErrLost) || !errors.Is(err, resourcelock.ErrGuardLost) {
		t.Fatalf("A's guarded write after B took over = %v, want ErrLost and ErrGuardLost", err)
	}
	var lost *dynalease.LostError
	if !errors.As(err, &lost) || lost.Reason != dynalease.Stolen || lost.HolderIdentity != b.Identity() {
		t.Errorf("A's loss is %v, want stolen by %s", err, b.Identity())
	}
	a.wantTransactions(t, "A's guarded write", 1) // refused by the server, not by A's own clock
	e.wantItem("A's refused Put over B's item", "ledger", b.Identity(), 2)
	e.wantItem("A's refused Put", "a-only", "", 0)
	e.wantItem("A's refused Delete", "ext", b.Identity(), 0)
	if la.IsHeld() || !fgEnded(la) || !errors.Is(la.Err(), dynalease.ErrLost) {
		t.Errorf("after the refusal A's lock: held %v, ended %v, err %v; want lost", la.IsHeld(), fgEnded(la), la.Err())
	}

	if err := lb.GuardItems(ctx, e.bump("ledger", b.Identity(), 2, 3)); err != nil {
		t.Fatalf("B's second guarded write: %v", err)
	}
	e.wantItem("B's second write", "ledger", b.Identity(), 3)
	if !lb.IsHeld() {
		t.Error("B lost its lock")
	}
}

// TestDynamoDBGuardRefusalOutlivesTheLocksEnd: a guarded write that passed
// the lock's own checks and is refused by DynamoDB after the lock ended
// locally meanwhile (its validity ran out, or its holder released it) must
// still say that the server refused it: dynamodbstore.Guarder promises
// ErrGuardLost, meaning nothing was applied, and Lock.Guard that the error
// matches it. Lock.Guard instead returns the lock's earlier end (l.err):
// an dynalease.Expired *dynalease.LostError without ErrGuardLost, or ErrNotHeld, which
// matches neither ErrLost nor ErrGuardLost nor ErrNotHeld.
func TestDynamoDBGuardRefusalOutlivesTheLocksEnd(t *testing.T) {
	e := newFGEnv(t)
	for i, how := range []string{"expired meanwhile", "released meanwhile"} {
		t.Run(how, func(t *testing.T) {
			e := e.sub(t)
			frozen := clocktesting.NewFakeClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
			a := e.newClient("a", lock.WithClock(frozen))
			key, item := fmt.Sprintf("ended-%d", i), fmt.Sprintf("ended-item-%d", i)
			l := a.mustAcquire(t, key)
			// The transaction waits in the transport, past the lock's
			// checks, while the lock ends.
			const hold = 250 * time.Millisecond // within the request timeout (fgTimeout)
			h := a.ft.Add(faulthttp.Rule{Op: "TransactWriteItems", Times: 1, Fault: faulthttp.Delay(hold)})
			defer h.Remove()
			done := make(chan error, 1)
			began := time.Now()
			go func() { done <- l.GuardItems(context.Background(), e.put(fgItem(item, a.Identity(), 1))) }()
			for h.Hits() == 0 {
				if time.Since(began) > fgPatient {
					t.Fatal("the guarded write never reached the transport")
				}
				time.Sleep(time.Millisecond)
			}
			switch how {
			case "expired meanwhile":
				// Someone else takes the row (as a Java client would), and
				// the holder's validity runs out on its clock.
				e.putRaw(e.locks, fgJavaRow(key, "java-host", "rvn-"+key, time.Minute, false))
				frozen.Step(fgLease)
				for !fgEnded(l) {
					time.Sleep(time.Millisecond)
				}
			case "released meanwhile":
				if err := l.Release(context.Background()); err != nil {
					t.Fatalf("Release: %v", err)
				}
			}
			if time.Since(began) >= hold {
				t.Fatalf("the lock took %v to end, longer than the transaction was held back (%v)", time.Since(began), hold)
			}
			err := <-done
			e.wantItem("a refused guarded write", item, "", 0)
			if err == nil {
				t.Fatal("the guarded write committed over a row that was not the holder's")
			}
			if a.ft.Count("TransactWriteItems") != 1 {
				t.Fatalf("%d TransactWriteItems sent, want 1", a.ft.Count("TransactWriteItems"))
			}
			if !errors.Is(err, resourcelock.ErrGuardLost) {
				t.Fatalf("DynamoDB refused the guarded write (nothing applied), but Guard returned %q (%T), which does not match resourcelock.ErrGuardLost", err, err)
			}
		})
	}
}
