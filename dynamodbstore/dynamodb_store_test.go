package dynamodbstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/faulthttp"
	"github.com/dynalease/dynalease/resourcelock"
)

// storeTable is one test's table with a dynamodbstore.Store on it, and a client
// that counts requests.
type storeTable struct {
	c     *dynamodb.Client
	table string
	spec  ddbtest.TableSpec
	ft    *faulthttp.Transport
	store *dynamodbstore.Store // sends through ft
}

// newStoreTable creates a table of spec and a store on it configured for
// spec, edited by edit.
func newStoreTable(t *testing.T, spec ddbtest.TableSpec, edit ...func(*dynamodbstore.Config)) *storeTable {
	t.Helper()
	c := ddbtest.Client(t)
	if spec.PartitionKey == "" {
		spec.PartitionKey = ddbtest.DefaultPartitionKey
	}
	st := &storeTable{c: c, table: ddbtest.NewTable(t, c, spec), spec: spec, ft: faulthttp.New(nil)}
	t.Cleanup(st.ft.CloseIdleConnections)
	counted := ddbtest.Client(t, func(o *dynamodb.Options) { o.HTTPClient = st.ft }, quickRetries(3, 10*time.Millisecond))
	cfg := dynamodbstore.Config{Client: counted, Table: st.table, PartitionKeyAttribute: spec.PartitionKey, SortKeyAttribute: spec.SortKey}
	for _, e := range edit {
		e(&cfg)
	}
	s, err := dynamodbstore.New(cfg)
	if err != nil {
		t.Fatalf("dynamodbstore.New: %v", err)
	}
	st.store = s
	// The table check, made now so that the tests count only their own
	// operations' requests (a table a test breaks on purpose fails it; the
	// store then checks again at its first request).
	_, _ = s.Tables(t.Context())
	st.ft.Reset()
	return st
}

func (st *storeTable) rawKey(k resourcelock.Key) map[string]types.AttributeValue {
	m := map[string]types.AttributeValue{st.spec.PartitionKey: &types.AttributeValueMemberS{Value: k.Partition}}
	if st.spec.SortKey != "" {
		m[st.spec.SortKey] = &types.AttributeValueMemberS{Value: k.Sort}
	}
	return m
}

// putRaw stores item at k unconditionally, as another client would.
func (st *storeTable) putRaw(t *testing.T, k resourcelock.Key, item map[string]types.AttributeValue) {
	t.Helper()
	item = maps.Clone(item)
	maps.Copy(item, st.rawKey(k))
	if _, err := st.c.PutItem(testCtx(t), &dynamodb.PutItemInput{TableName: aws.String(st.table), Item: item}); err != nil {
		t.Fatalf("PutItem %s: %v", k, err)
	}
}

// getRaw reads the item at k with a strongly consistent GetItem.
func (st *storeTable) getRaw(t *testing.T, k resourcelock.Key) map[string]types.AttributeValue {
	t.Helper()
	out, err := st.c.GetItem(testCtx(t), &dynamodb.GetItemInput{
		TableName: aws.String(st.table), Key: st.rawKey(k), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem %s: %v", k, err)
	}
	return out.Item
}

// create writes a record held by holder at k with opts, which must succeed.
func (st *storeTable) create(t *testing.T, k resourcelock.Key, holder, data string, opts rows.WriteOptions) rows.Item {
	t.Helper()
	r := newRec(time.Second, data)
	r.HolderIdentity = holder
	it, err := rows.MustOpen(st.store).Create(testCtx(t), k, r, opts)
	if err != nil {
		t.Fatalf("Create %s: %v", k, err)
	}
	return it
}

func sameItem(a, b rows.Item) bool {
	return a.Key == b.Key && record.Equal(a.Record, b.Record) && a.Expires.Equal(b.Expires) &&
		len(a.Attributes) == len(b.Attributes) && maps.EqualFunc(a.Attributes, b.Attributes, func(x, y any) bool {
		xv, xok := x.(types.AttributeValue)
		yv, yok := y.(types.AttributeValue)
		return xok && yok && avEqual(xv, yv)
	})
}

// scanned is what one Scan passed to fn.
type scanned struct {
	items map[resourcelock.Key]rows.Item
	errs  map[resourcelock.Key]error
	calls int
}

// scan runs a Scan that continues past rows passed with an error.
func (st *storeTable) scan(t *testing.T, partition string) scanned {
	t.Helper()
	got := scanned{items: map[resourcelock.Key]rows.Item{}, errs: map[resourcelock.Key]error{}}
	err := rows.MustOpen(st.store).Scan(testCtx(t), partition, func(it rows.Item, err error) error {
		got.calls++
		_, seen := got.items[it.Key]
		_, seenErr := got.errs[it.Key]
		if seen || seenErr {
			t.Errorf("Scan(%q) passed %s twice", partition, it.Key)
		}
		if err != nil {
			got.errs[it.Key] = err
		} else {
			got.items[it.Key] = it
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Scan(%q): %v", partition, err)
	}
	return got
}

func wantItems(t *testing.T, what string, got, want map[resourcelock.Key]rows.Item) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: row %s not seen", what, k)
		} else if !sameItem(g, w) {
			t.Errorf("%s: row %s:\n got  %+v\n want %+v", what, k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected row %s", what, k)
		}
	}
}

func TestDynamoDBStoreSortKey(t *testing.T) {
	t.Parallel()
	st := newStoreTable(t, ddbtest.TableSpec{PartitionKey: "lockGroup", SortKey: "lockName"})
	ctx := testCtx(t)
	all := map[resourcelock.Key]rows.Item{}
	byGroup := map[string]map[resourcelock.Key]rows.Item{}
	for g := range 3 {
		group := fmt.Sprintf("group-%d", g)
		byGroup[group] = map[resourcelock.Key]rows.Item{}
		for n := range 4 {
			k := resourcelock.Key{Partition: group, Sort: fmt.Sprintf("lock-%d", n)}
			it := st.create(t, k, "a", k.String(), rows.WriteOptions{})
			if it.Key != k {
				t.Fatalf("Create at %s returned key %s", k, it.Key)
			}
			all[k], byGroup[group][k] = it, it
		}
	}

	// Writes address one row: a takeover and a removal leave the rows
	// with the same partition or the same sort key value alone.
	k11 := resourcelock.Key{Partition: "group-1", Sort: "lock-1"}
	r := newRec(time.Second, "")
	r.HolderIdentity = "b"
	taken, err := rows.MustOpen(st.store).Update(ctx, k11, resourcelock.Precondition{RVN: all[k11].RVN}, r, rows.WriteOptions{})
	if err != nil || taken.Acquisitions != 2 || taken.Key != k11 {
		t.Fatalf("takeover of %s: %+v, %v", k11, taken, err)
	}
	all[k11], byGroup["group-1"][k11] = taken, taken
	k12 := resourcelock.Key{Partition: "group-1", Sort: "lock-2"}
	if err := rows.MustOpen(st.store).Remove(ctx, k12, resourcelock.Precondition{RVN: all[k12].RVN}); err != nil {
		t.Fatalf("Remove %s: %v", k12, err)
	}
	delete(all, k12)
	delete(byGroup["group-1"], k12)
	if _, err := rows.MustOpen(st.store).Get(ctx, k12); !errors.Is(err, resourcelock.ErrNotFound) {
		t.Fatalf("Get %s after Remove: %v, want ErrNotFound", k12, err)
	}
	for k, want := range all {
		got, err := rows.MustOpen(st.store).Get(ctx, k)
		if err != nil || !sameItem(got, want) {
			t.Fatalf("Get %s = %+v, %v; want %+v", k, got, err, want)
		}
	}

	st.ft.Reset()
	got := st.scan(t, "")
	wantItems(t, "Scan of every row", got.items, all)
	if n := st.ft.Count("Query"); n != 0 || st.ft.Count("Scan") == 0 {
		t.Errorf("Scan of every row sent %v, want Scan requests only", st.ft.Counts())
	}
	for group, want := range byGroup {
		st.ft.Reset()
		got := st.scan(t, group)
		wantItems(t, "Scan of "+group, got.items, want)
		if n := st.ft.Count("Scan"); n != 0 || st.ft.Count("Query") != 1 {
			t.Errorf("Scan of partition %s sent %v, want one Query", group, st.ft.Counts())
		}
	}
	for _, p := range []string{"group", "group-3", "lock-1"} {
		if got := st.scan(t, p); got.calls != 0 {
			t.Errorf("Scan of partition %q passed %d rows, want none", p, got.calls)
		}
	}
}

// DynamoDB Local returns at most 1 MB per Scan or Query page.
func TestDynamoDBStoreScanPages(t *testing.T) {
	t.Parallel()
	st := newStoreTable(t, ddbtest.TableSpec{PartitionKey: "lockGroup", SortKey: "lockName"})
	const big, small = 12, 6 // rows in partitions "big" and "small"
	all := map[resourcelock.Key]rows.Item{}
	inBig := map[resourcelock.Key]rows.Item{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range big + small {
		k := resourcelock.Key{Partition: "big", Sort: fmt.Sprintf("%03d", i)}
		if i >= big {
			k.Partition = "small"
		}
		// Distinct data per row, so a row read twice or mixed up shows.
		data := strings.Repeat(fmt.Sprintf("%-10d", i), 10*1024)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := newRec(time.Second, data)
			r.HolderIdentity = "a"
			it, err := rows.MustOpen(st.store).Create(testCtx(t), k, r, rows.WriteOptions{})
			if err != nil {
				t.Errorf("Create %s: %v", k, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			all[k] = it
			if k.Partition == "big" {
				inBig[k] = it
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	st.ft.Reset()
	got := st.scan(t, "")
	wantItems(t, "paged Scan", got.items, all)
	if n := st.ft.Count("Scan"); n < 2 {
		t.Errorf("Scan of %d rows of 100 KB sent %d Scan requests, want pages", len(all), n)
	}
	st.ft.Reset()
	got = st.scan(t, "big")
	wantItems(t, "paged Query", got.items, inBig)
	if n := st.ft.Count("Query"); n < 2 {
		t.Errorf("Scan of partition big (%d rows of 100 KB) sent %d Query requests, want pages", len(inBig), n)
	}

	// fn's error stops the scan on a later page too.
	stop := errors.New("stop")
	calls := 0
	err := rows.MustOpen(st.store).Scan(testCtx(t), "", func(rows.Item, error) error {
		calls++
		if calls == big+1 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != big+1 {
		t.Errorf("Scan whose fn fails on call %d: %v after %d calls, want fn's error at once", big+1, err, calls)
	}
}

func TestDynamoDBStoreScanInvalidRows(t *testing.T) {
	t.Parallel()
	st := newStoreTable(t, ddbtest.TableSpec{PartitionKey: "lockGroup", SortKey: "lockName"})
	valid := map[resourcelock.Key]rows.Item{}
	for i := range 3 {
		k := resourcelock.Key{Partition: "g", Sort: fmt.Sprintf("valid-%d", i)}
		valid[k] = st.create(t, k, "a", "", rows.WriteOptions{})
	}
	good := dynamodbstore.GoldenJavaItems(t)[dynamodbstore.GoldenHeld]
	without := func(attr string) map[string]types.AttributeValue {
		m := maps.Clone(good)
		delete(m, attr)
		return m
	}
	with := func(attr string, v types.AttributeValue) map[string]types.AttributeValue {
		m := maps.Clone(good)
		m[attr] = v
		return m
	}
	bad := map[resourcelock.Key]map[string]types.AttributeValue{
		{Partition: "g", Sort: "no-owner"}:  without("ownerName"),
		{Partition: "g", Sort: "bad-lease"}: with("leaseDuration", &types.AttributeValueMemberS{Value: "soon"}),
		{Partition: "g", Sort: "ttl-as-S"}:  with("ttl", &types.AttributeValueMemberS{Value: "1700000000"}),
		{Partition: "h", Sort: "no-rvn"}:    without("recordVersionNumber"),
	}
	for k, item := range bad {
		st.putRaw(t, k, item)
	}

	check := func(partition string, wantBad int) {
		t.Helper()
		got := st.scan(t, partition)
		wantItems(t, fmt.Sprintf("valid rows of Scan(%q)", partition), got.items, valid)
		n := 0
		for k := range bad {
			if partition != "" && k.Partition != partition {
				continue
			}
			n++
			err, ok := got.errs[k]
			if !ok {
				t.Errorf("Scan(%q) did not pass invalid row %s with an error", partition, k)
				continue
			}
			if !errors.Is(err, resourcelock.ErrPermanent) || !strings.Contains(err.Error(), k.String()) {
				t.Errorf("Scan(%q) passed row %s with %v, want an invalid record (resourcelock.ErrPermanent) naming the row", partition, k, err)
			}
		}
		if len(got.errs) != n || n != wantBad {
			t.Errorf("Scan(%q) passed %d rows with errors, want %d", partition, len(got.errs), wantBad)
		}
	}
	check("", 4)
	check("g", 3)

	for k := range bad {
		if _, err := rows.MustOpen(st.store).Get(testCtx(t), k); !errors.Is(err, resourcelock.ErrPermanent) {
			t.Errorf("Get of invalid row %s: %v, want an invalid record (resourcelock.ErrPermanent)", k, err)
		}
	}

	// fn may stop at an invalid row by returning its error.
	err := rows.MustOpen(st.store).Scan(testCtx(t), "", func(_ rows.Item, err error) error { return err })
	if !errors.Is(err, resourcelock.ErrPermanent) {
		t.Errorf("Scan whose fn returns the row's error: %v, want an invalid record (resourcelock.ErrPermanent)", err)
	}
}

// ttlOf returns the raw item's attr as N, failing unless it is one.
func ttlOf(t *testing.T, item map[string]types.AttributeValue, attr string) string {
	t.Helper()
	n, ok := item[attr].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("attribute %s = %#v, want N", attr, item[attr])
	}
	return n.Value
}

func TestDynamoDBStoreTTLAttribute(t *testing.T) {
	t.Parallel()
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	expires := at.Add(250 * time.Millisecond)
	wantSecs := strconv.FormatInt(at.Unix()+1, 10)

	for _, tc := range []struct{ name, attr, config string }{
		{"default", dynamodbstore.DefaultTTLAttribute, ""},
		{"custom", "expiresAt", "expiresAt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := newStoreTable(t, ddbtest.TableSpec{}, func(c *dynamodbstore.Config) { c.TTLAttribute = tc.config })
			ctx := testCtx(t)
			k := resourcelock.Key{Partition: uuid.NewString()}
			it := st.create(t, k, "a", "", rows.WriteOptions{Expires: expires})
			raw := st.getRaw(t, k)
			if got := ttlOf(t, raw, tc.attr); got != wantSecs {
				t.Fatalf("TTL written as %s, want %s (epoch seconds, rounded up)", got, wantSecs)
			}
			if tc.attr != "ttl" {
				wantAbsent(t, raw, "ttl")
			}
			if !it.Expires.Equal(at.Add(time.Second)) || len(it.Attributes) != 0 {
				t.Fatalf("Create with Expires returned %+v", it)
			}

			// Every kind of write without Expires removes it.
			r := newRec(time.Second, "")
			r.HolderIdentity = "a"
			it, err := rows.MustOpen(st.store).Update(ctx, k, resourcelock.Precondition{RVN: it.RVN, HolderIdentity: "a"}, r, rows.WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wantAbsent(t, st.getRaw(t, k), tc.attr)
			if !it.Expires.IsZero() {
				t.Fatalf("renewal without Expires returned Expires %v", it.Expires)
			}
			r = newRec(time.Second, "")
			r.HolderIdentity = "a"
			it, err = rows.MustOpen(st.store).Update(ctx, k, resourcelock.Precondition{RVN: it.RVN, HolderIdentity: "a"}, r, rows.WriteOptions{Expires: expires})
			if err != nil {
				t.Fatal(err)
			}
			ttlOf(t, st.getRaw(t, k), tc.attr)
			r = newRec(time.Second, "")
			r.HolderIdentity = "b"
			if _, err := rows.MustOpen(st.store).Update(ctx, k, resourcelock.Precondition{RVN: it.RVN}, r, rows.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			wantAbsent(t, st.getRaw(t, k), tc.attr)

			// The TTL attribute is not an application attribute.
			_, err = rows.MustOpen(st.store).Create(ctx, resourcelock.Key{Partition: uuid.NewString()}, r, rows.WriteOptions{
				Attributes: map[string]any{tc.attr: &types.AttributeValueMemberN{Value: "1"}},
			})
			if !errors.Is(err, dynalease.ErrInvalid) {
				t.Fatalf("Create with attribute %s: %v, want dynalease.ErrInvalid", tc.attr, err)
			}
		})
	}
}

// A row that another client wrote with a TTL, maybe one about to pass,
// keeps none once we hold it: DynamoDB would otherwise delete a live lock.
func TestDynamoDBStoreTakeoverRemovesForeignTTL(t *testing.T) {
	t.Parallel()
	st := newStoreTable(t, ddbtest.TableSpec{})
	ctx := testCtx(t)
	golden := dynamodbstore.GoldenJavaItems(t)
	soon := time.Now().Add(time.Minute).Truncate(time.Second)
	ttl := &types.AttributeValueMemberN{Value: strconv.FormatInt(soon.Unix(), 10)}

	held := resourcelock.Key{Partition: uuid.NewString()}
	item := maps.Clone(golden[dynamodbstore.GoldenHeld])
	item["ttl"] = ttl
	st.putRaw(t, held, item)
	cur, err := rows.MustOpen(st.store).Get(ctx, held)
	if err != nil {
		t.Fatal(err)
	}
	if !cur.Expires.Equal(soon) || len(cur.Attributes) != 0 {
		t.Fatalf("foreign row with a TTL read as %+v, want Expires %v and no attributes", cur, soon)
	}
	r := newRec(time.Second, "")
	r.HolderIdentity = "go"
	it, err := rows.MustOpen(st.store).Update(ctx, held, resourcelock.Precondition{RVN: cur.RVN}, r, rows.WriteOptions{})
	if err != nil {
		t.Fatalf("takeover of a foreign row: %v", err)
	}
	wantAbsent(t, st.getRaw(t, held), "ttl")
	if !it.Expires.IsZero() {
		t.Fatalf("takeover returned Expires %v", it.Expires)
	}

	rel := resourcelock.Key{Partition: uuid.NewString()}
	item = maps.Clone(golden[dynamodbstore.GoldenReleasedKept])
	item["ttl"] = ttl
	st.putRaw(t, rel, item)
	if _, err := rows.MustOpen(st.store).Create(ctx, rel, r, rows.WriteOptions{KeepData: true}); err != nil {
		t.Fatalf("Create over a foreign released row: %v", err)
	}
	raw := st.getRaw(t, rel)
	wantAbsent(t, raw, "ttl")
	if !avEqual(raw["data"], item["data"]) {
		t.Errorf("Create with KeepData over a foreign row changed data to %#v", raw["data"])
	}
}

func TestDynamoDBStoreRequestsPerOperation(t *testing.T) {
	t.Parallel()
	st := newStoreTable(t, ddbtest.TableSpec{})
	ctx := testCtx(t)
	k := resourcelock.Key{Partition: uuid.NewString()}
	r := newRec(time.Second, "")
	r.HolderIdentity = "a"

	st.ft.Reset()
	it, err := rows.MustOpen(st.store).Create(ctx, k, r, rows.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantCounts(t, st.ft, "Create", map[string]int{opUpdateItem: 1})
	if _, err := rows.MustOpen(st.store).Get(ctx, k); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, st.ft, "Get", map[string]int{opGetItem: 1})
	r2 := newRec(time.Second, "")
	r2.HolderIdentity = "a"
	if it, err = rows.MustOpen(st.store).Update(ctx, k, resourcelock.Precondition{RVN: it.RVN, HolderIdentity: "a"}, r2, rows.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, st.ft, "Update", map[string]int{opUpdateItem: 1})
	st.scan(t, "")
	wantCounts(t, st.ft, "Scan", map[string]int{"Scan": 1})
	st.scan(t, k.Partition)
	wantCounts(t, st.ft, "Scan of a partition", map[string]int{"Query": 1})

	err = rows.MustOpen(st.store).Remove(ctx, k, resourcelock.Precondition{RVN: uuid.NewString()})
	if !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("Remove on a wrong RVN: %v, want ErrConflict", err)
	}
	wantCounts(t, st.ft, "Remove on a wrong RVN", map[string]int{"DeleteItem": 1})
	if err := rows.MustOpen(st.store).Remove(ctx, k, resourcelock.Precondition{RVN: it.RVN, HolderIdentity: "a"}); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	wantCounts(t, st.ft, "Remove", map[string]int{"DeleteItem": 1})
	if len(st.getRaw(t, k)) != 0 {
		t.Fatal("Remove left the row")
	}
	err = rows.MustOpen(st.store).Remove(ctx, k, resourcelock.Precondition{RVN: it.RVN, HolderIdentity: "a"})
	if !errors.Is(err, resourcelock.ErrConflict) {
		t.Fatalf("Remove of a missing row: %v, want ErrConflict", err)
	}
	wantCounts(t, st.ft, "Remove of a missing row", map[string]int{"DeleteItem": 1})
}

func TestDynamoDBStoreMissingTable(t *testing.T) {
	t.Parallel()
	table := "no-such-table-" + uuid.NewString()
	s, err := dynamodbstore.New(dynamodbstore.Config{Client: ddbtest.Client(t), Table: table})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	k := resourcelock.Key{Partition: "p"}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, resourcelock.ErrPermanent) || !strings.Contains(err.Error(), table) {
			t.Errorf("%s on a missing table: %v, want a permanent error naming it", what, err)
		}
	}
	check("Remove", rows.MustOpen(s).Remove(ctx, k, resourcelock.Precondition{RVN: "r"}))
	check("Scan", rows.MustOpen(s).Scan(ctx, "", func(rows.Item, error) error { return nil }))
	check("Scan of a partition", rows.MustOpen(s).Scan(ctx, "p", func(rows.Item, error) error { return nil }))
}

// countingStore is a StoreAPI that records calls and answers none of them.
type countingStore struct {
	mu    sync.Mutex
	calls []string
}

func (c *countingStore) count(op string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, op)
	return errNoServer
}

func (c *countingStore) sent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

func (c *countingStore) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, c.count("GetItem")
}

func (c *countingStore) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, c.count("UpdateItem")
}

func (c *countingStore) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, c.count("DeleteItem")
}

func (c *countingStore) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return nil, c.count("Scan")
}

func (c *countingStore) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return nil, c.count("Query")
}

// Runs without DynamoDB: keys and options that do not fit the table are
// refused before any request.
func TestDynamoDBStoreInvalidRequestsSendNothing(t *testing.T) {
	api := &countingStore{}
	plain, err := dynamodbstore.New(dynamodbstore.Config{Client: api, Table: "locks", SkipTableCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	sorted, err := dynamodbstore.New(dynamodbstore.Config{
		Client: api, Table: "locks", PartitionKeyAttribute: "lockGroup", SortKeyAttribute: "lockName", TTLAttribute: "expiresAt", SkipTableCheck: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := newRec(time.Second, "")
	r.HolderIdentity = "a"
	p := resourcelock.Precondition{RVN: "r", HolderIdentity: "a"}
	none := rows.WriteOptions{}
	wantInvalid := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("%s: %v, want dynalease.ErrInvalid", what, err)
		}
	}
	each := func(what string, s *dynamodbstore.Store, k resourcelock.Key, opts rows.WriteOptions) {
		t.Helper()
		_, err := rows.MustOpen(s).Create(ctx, k, r, opts)
		wantInvalid("Create with "+what, err)
		_, err = rows.MustOpen(s).Update(ctx, k, p, r, opts)
		wantInvalid("Update with "+what, err)
		if opts.Attributes == nil && opts.Expires.IsZero() {
			_, err = rows.MustOpen(s).Get(ctx, k)
			wantInvalid("Get with "+what, err)
			wantInvalid("Remove with "+what, rows.MustOpen(s).Remove(ctx, k, p))
		}
	}

	each("a sort key value on a table without sort key", plain, resourcelock.Key{Partition: "p", Sort: "s"}, none)
	each("no sort key value on a table with a sort key", sorted, resourcelock.Key{Partition: "p"}, none)
	each("a sort key value over 1024 bytes", sorted, resourcelock.Key{Partition: "p", Sort: strings.Repeat("s", 1025)}, none)
	each("a partition over 2048 bytes", sorted, resourcelock.Key{Partition: strings.Repeat("p", 2049), Sort: "s"}, none)
	for _, attr := range []string{"lockGroup", "lockName", "expiresAt", "ownerName", "data", "isReleased", "leaderTransitions"} {
		each("attribute "+attr, sorted, resourcelock.Key{Partition: "p", Sort: "s"}, rows.WriteOptions{
			Attributes: map[string]any{attr: &types.AttributeValueMemberS{Value: "x"}},
		})
	}
	each("a TTL before 1970", plain, resourcelock.Key{Partition: "p"}, rows.WriteOptions{Expires: time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)})
	wantInvalid("Scan of a partition over 2048 bytes", rows.MustOpen(sorted).Scan(ctx, strings.Repeat("p", 2049), func(rows.Item, error) error { return nil }))
	if sent := api.sent(); len(sent) != 0 {
		t.Fatalf("invalid requests sent %v, want nothing", sent)
	}

	// The counter counts, and the attribute names reserved follow the
	// table's configuration: "key" and "ttl" are the sorted table's own
	// to use.
	app := rows.WriteOptions{Attributes: map[string]any{
		"key": &types.AttributeValueMemberS{Value: "x"}, "ttl": &types.AttributeValueMemberN{Value: "1"},
	}}
	if _, err := rows.MustOpen(sorted).Create(ctx, resourcelock.Key{Partition: "p", Sort: "s"}, r, app); !errors.Is(err, errNoServer) {
		t.Fatalf("Create with attributes key and ttl on a table keyed otherwise: %v, want errNoServer", err)
	}
	if err := rows.MustOpen(plain).Remove(ctx, resourcelock.Key{Partition: "p"}, p); !errors.Is(err, errNoServer) {
		t.Fatalf("valid Remove: %v, want errNoServer", err)
	}
	if sent := api.sent(); !slices.Equal(sent, []string{"UpdateItem", "DeleteItem"}) {
		t.Fatalf("valid requests sent %v, want UpdateItem and DeleteItem", sent)
	}
}

// Runs without DynamoDB.
func TestNewDynamoDBStoreValidation(t *testing.T) {
	api := &countingStore{}
	valid := func() dynamodbstore.Config {
		return dynamodbstore.Config{Client: api, Table: "locks", SkipTableCheck: true}
	}
	for _, tc := range []struct {
		name string
		edit func(*dynamodbstore.Config)
	}{
		{"nil client", func(c *dynamodbstore.Config) { c.Client = nil }},
		{"empty table", func(c *dynamodbstore.Config) { c.Table = "" }},
		{"negative RequestTimeout", func(c *dynamodbstore.Config) { c.RequestTimeout = -time.Nanosecond }},
		{"reserved partition key", func(c *dynamodbstore.Config) { c.PartitionKeyAttribute = "ownerName" }},
		{"reserved sort key", func(c *dynamodbstore.Config) { c.SortKeyAttribute = "data" }},
		{"sort key equals partition key", func(c *dynamodbstore.Config) { c.SortKeyAttribute = "key" }},
		{"reserved TTL attribute", func(c *dynamodbstore.Config) { c.TTLAttribute = "recordVersionNumber" }},
		{"TTL attribute is the partition key", func(c *dynamodbstore.Config) { c.TTLAttribute = "key" }},
		{"TTL attribute is the custom partition key", func(c *dynamodbstore.Config) {
			c.PartitionKeyAttribute, c.TTLAttribute = "pk", "pk"
		}},
		{"TTL attribute is the sort key", func(c *dynamodbstore.Config) { c.SortKeyAttribute, c.TTLAttribute = "sk", "sk" }},
		{"default TTL attribute as sort key", func(c *dynamodbstore.Config) { c.SortKeyAttribute = "ttl" }},
		{"MaxTransactItems without room for an item", func(c *dynamodbstore.Config) { c.MaxTransactItems = 1 }},
		{"MaxTransactItems above DynamoDB's limit", func(c *dynamodbstore.Config) { c.MaxTransactItems = 101 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.edit(&cfg)
			s, err := dynamodbstore.New(cfg)
			if !errors.Is(err, dynalease.ErrInvalid) {
				t.Fatalf("dynamodbstore.New = %v, %v; want dynalease.ErrInvalid", s, err)
			}
			if s != nil {
				t.Errorf("dynamodbstore.New returned a store with its error")
			}
		})
	}
	for _, tc := range []struct {
		name string
		edit func(*dynamodbstore.Config)
	}{
		{"minimal", func(*dynamodbstore.Config) {}},
		{"custom keys and TTL", func(c *dynamodbstore.Config) {
			c.PartitionKeyAttribute, c.SortKeyAttribute, c.TTLAttribute = "lockGroup", "lockName", "expiresAt"
		}},
		{"sort key named ttl with another TTL attribute", func(c *dynamodbstore.Config) {
			c.SortKeyAttribute, c.TTLAttribute = "ttl", "expiresAt"
		}},
		{"request timeout", func(c *dynamodbstore.Config) { c.RequestTimeout = time.Millisecond }},
		{"MaxTransactItems at its bounds", func(c *dynamodbstore.Config) { c.MaxTransactItems = 2 }},
		{"MaxTransactItems at DynamoDB's limit", func(c *dynamodbstore.Config) { c.MaxTransactItems = 100 }},
	} {
		t.Run("valid "+tc.name, func(t *testing.T) {
			cfg := valid()
			tc.edit(&cfg)
			s, err := dynamodbstore.New(cfg)
			if err != nil {
				t.Fatalf("dynamodbstore.New: %v", err)
			}
			if s.Describe() != "dynamodb:locks" {
				t.Errorf("Describe() = %q, want dynamodb:locks", s.Describe())
			}
		})
	}
	if sent := api.sent(); len(sent) != 0 {
		t.Fatalf("dynamodbstore.New sent %v, want nothing", sent)
	}
}
