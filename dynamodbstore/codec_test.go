package dynamodbstore

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

var (
	testAcquire = time.Date(2026, 11, 21, 12, 30, 45, 123_000_000, time.UTC)
	testRenew   = testAcquire.Add(1500 * time.Millisecond)
)

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func nv(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func bv(v string) types.AttributeValue { return &types.AttributeValueMemberB{Value: []byte(v)} }

func TestDecodeGoldenJavaItems(t *testing.T) {
	items := GoldenJavaItems(t)
	want := map[string]resourcelock.Record{
		GoldenHeld: {
			HolderIdentity: goldenHeldOwner,
			RVN:            "eaada884-0b78-4ed5-9fa1-e3d90b113f0f",
			LeaseDuration:  6 * time.Second,
			Data:           []byte("java:host-b.example-9d2e"),
		},
		GoldenHeartbeat: {
			HolderIdentity: goldenHeldOwner,
			RVN:            "ae65fc19-b58d-4380-a45f-7273036e9140",
			LeaseDuration:  6 * time.Second,
			Data:           []byte("java:host-b.example-9d2e"),
		},
		GoldenReleasedKept: {
			HolderIdentity: goldenReleasedOwner,
			RVN:            "4a359dcd-62df-466e-ab75-0ecd2c158288",
			LeaseDuration:  20 * time.Second,
			Released:       true,
			Data:           []byte("java:host-a.example-3f1c"),
		},
	}
	if len(items) != len(want) {
		t.Fatalf("%d golden items, want %d", len(items), len(want))
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			got, err := decodeRecord(items[name])
			if err != nil {
				t.Fatalf("decodeRecord: %v", err)
			}
			if !record.Equal(got, w) {
				t.Fatalf("decoded\n got  %+v\n want %+v", got, w)
			}
			if got.Acquisitions != 0 || !got.AcquireTime.IsZero() || !got.RenewTime.IsZero() {
				t.Fatalf("a Java item has none of our attributes, got %+v", got)
			}
		})
	}
}

// validItem returns an item with every attribute dynalease writes.
func validItem() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"key":           sv("lock"),
		attrOwner:       sv("me"),
		attrLease:       sv("1500"),
		attrRVN:         sv("rvn-1"),
		attrData:        bv("payload"),
		attrTransitions: nv("3"),
		attrAcquireTime: sv("2026-11-21T12:30:45.123Z"),
		attrRenewTime:   sv("2026-11-21T12:30:46.623Z"),
	}
}

func TestDecodeValidItem(t *testing.T) {
	got, err := decodeRecord(validItem())
	if err != nil {
		t.Fatal(err)
	}
	want := resourcelock.Record{
		HolderIdentity: "me",
		RVN:            "rvn-1",
		LeaseDuration:  1500 * time.Millisecond,
		Acquisitions:   3,
		AcquireTime:    testAcquire,
		RenewTime:      testRenew,
		Data:           []byte("payload"),
	}
	if !record.Equal(got, want) {
		t.Fatalf("decoded\n got  %+v\n want %+v", got, want)
	}
}

func TestDecodeInvalidItems(t *testing.T) {
	for _, tc := range []struct {
		name string
		attr string // the attribute the error must name
		edit func(map[string]types.AttributeValue)
	}{
		{"ownerName missing", attrOwner, func(m map[string]types.AttributeValue) { delete(m, attrOwner) }},
		{"ownerName empty", attrOwner, func(m map[string]types.AttributeValue) { m[attrOwner] = sv("") }},
		{"ownerName as N", attrOwner, func(m map[string]types.AttributeValue) { m[attrOwner] = nv("1") }},
		{"recordVersionNumber missing", attrRVN, func(m map[string]types.AttributeValue) { delete(m, attrRVN) }},
		{"recordVersionNumber as B", attrRVN, func(m map[string]types.AttributeValue) { m[attrRVN] = bv("x") }},
		{"leaseDuration missing", attrLease, func(m map[string]types.AttributeValue) { delete(m, attrLease) }},
		{"leaseDuration as N", attrLease, func(m map[string]types.AttributeValue) { m[attrLease] = nv("6000") }},
		{"leaseDuration abc", attrLease, func(m map[string]types.AttributeValue) { m[attrLease] = sv("abc") }},
		{"leaseDuration negative", attrLease, func(m map[string]types.AttributeValue) { m[attrLease] = sv("-5") }},
		{"leaseDuration zero", attrLease, func(m map[string]types.AttributeValue) { m[attrLease] = sv("0") }},
		{"leaseDuration fraction", attrLease, func(m map[string]types.AttributeValue) { m[attrLease] = sv("1.5") }},
		{"leaseDuration Go duration", attrLease, func(m map[string]types.AttributeValue) { m[attrLease] = sv("20s") }},
		{"leaseDuration overflows", attrLease, func(m map[string]types.AttributeValue) { m[attrLease] = sv("99999999999999999999") }},
		{"leaseDuration over the limit", attrLease, func(m map[string]types.AttributeValue) {
			m[attrLease] = sv(strconv.FormatInt(math.MaxInt64/int64(time.Millisecond), 10))
		}},
		{"data as S", attrData, func(m map[string]types.AttributeValue) { m[attrData] = sv("payload") }},
		{"data as NULL", attrData, func(m map[string]types.AttributeValue) { m[attrData] = &types.AttributeValueMemberNULL{Value: true} }},
		{"isReleased as BOOL", attrReleased, func(m map[string]types.AttributeValue) {
			m[attrReleased] = &types.AttributeValueMemberBOOL{Value: true}
		}},
		{"isReleased as N", attrReleased, func(m map[string]types.AttributeValue) { m[attrReleased] = nv("1") }},
		{"leaderTransitions as S", attrTransitions, func(m map[string]types.AttributeValue) { m[attrTransitions] = sv("3") }},
		{"leaderTransitions fraction", attrTransitions, func(m map[string]types.AttributeValue) { m[attrTransitions] = nv("1.5") }},
		{"acquireTime as N", attrAcquireTime, func(m map[string]types.AttributeValue) { m[attrAcquireTime] = nv("1") }},
		{"acquireTime malformed", attrAcquireTime, func(m map[string]types.AttributeValue) { m[attrAcquireTime] = sv("yesterday") }},
		{"renewTime malformed", attrRenewTime, func(m map[string]types.AttributeValue) { m[attrRenewTime] = sv("2026-13-01T00:00:00Z") }},
		{"renewTime as M", attrRenewTime, func(m map[string]types.AttributeValue) { m[attrRenewTime] = &types.AttributeValueMemberM{} }},
		// Found by the fuzz seeds: the year 0 parses but can never be
		// written back by a renewal that keeps the time.
		{"acquireTime in the year 0", attrAcquireTime, func(m map[string]types.AttributeValue) { m[attrAcquireTime] = sv("0000-01-01T00:00:00Z") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := validItem()
			tc.edit(item)
			rec, err := decodeRecord(item)
			if !errors.Is(err, resourcelock.ErrPermanent) {
				t.Fatalf("decodeRecord = %+v, %v; want resourcelock.ErrPermanent", rec, err)
			}
			if !strings.Contains(err.Error(), tc.attr) {
				t.Fatalf("error %q does not name attribute %s", err, tc.attr)
			}
		})
	}
}

// isReleased other than "1" does not count as released, as in the Java
// client's condition.
func TestDecodeReleasedOnlyWhenOne(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "0": false, "true": false, "": false} {
		item := validItem()
		item[attrReleased] = sv(v)
		rec, err := decodeRecord(item)
		if err != nil {
			t.Fatalf("isReleased %q: %v", v, err)
		}
		if rec.Released != want {
			t.Errorf("isReleased %q decoded as Released=%v, want %v", v, rec.Released, want)
		}
	}
}

func TestDecodeTimeWithOffsetIsUTC(t *testing.T) {
	item := validItem()
	item[attrAcquireTime] = sv("2026-11-21T14:30:45.123987+02:00")
	rec, err := decodeRecord(item)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.AcquireTime.Equal(testAcquire) || rec.AcquireTime.Location() != time.UTC || rec.AcquireTime != testAcquire {
		t.Fatalf("AcquireTime = %v, want %v", rec.AcquireTime, testAcquire)
	}
}

// update is one action of a parsed update expression.
type update struct {
	action string // SET, REMOVE or ADD
	name   string // attribute name placeholder
	value  string // value placeholder; empty for REMOVE
}

// parseUpdate parses the update expressions writeUpdate builds: clauses
// SET #n = :v, ...; REMOVE #n, ...; ADD #n :v, ...
func parseUpdate(t *testing.T, expr string) []update {
	t.Helper()
	toks := strings.Fields(strings.ReplaceAll(expr, ",", " , "))
	var out []update
	action := ""
	seen := map[string]bool{}
	for i := 0; i < len(toks); {
		switch toks[i] {
		case "SET", "REMOVE", "ADD":
			if seen[toks[i]] {
				t.Fatalf("%q: clause %s twice", expr, toks[i])
			}
			seen[toks[i]] = true
			action = toks[i]
			i++
			continue
		}
		if action == "" {
			t.Fatalf("%q: does not start with a clause keyword", expr)
		}
		u := update{action: action, name: toks[i]}
		i++
		switch action {
		case "SET":
			if i+1 >= len(toks) || toks[i] != "=" {
				t.Fatalf("%q: malformed SET after %s", expr, u.name)
			}
			u.value = toks[i+1]
			i += 2
		case "ADD":
			if i >= len(toks) {
				t.Fatalf("%q: ADD %s without a value", expr, u.name)
			}
			u.value = toks[i]
			i++
		}
		if (!strings.HasPrefix(u.name, "#") && !literalAttributes[u.name]) || (u.value != "" && !strings.HasPrefix(u.value, ":")) {
			t.Fatalf("%q: %+v does not use placeholders where it must", expr, u)
		}
		out = append(out, u)
		if i < len(toks) && toks[i] == "," {
			i++
			if i >= len(toks) || toks[i] == "SET" || toks[i] == "REMOVE" || toks[i] == "ADD" {
				t.Fatalf("%q: dangling comma", expr)
			}
		}
	}
	return out
}

// resolveName returns the attribute an expression's name token stands
// for: a placeholder's, or one of literalAttributes written as it is.
func resolveName(e *expression, tok string) (string, bool) {
	if literalAttributes[tok] {
		return tok, true
	}
	attr, ok := e.names[tok]
	return attr, ok
}

var placeholderRE = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

// checkPlaceholders fails unless the placeholders used in texts are exactly
// the ones defined in e: DynamoDB rejects both undefined and unused ones.
func checkPlaceholders(t *testing.T, e *expression, texts ...string) {
	t.Helper()
	used := map[string]bool{}
	for _, text := range texts {
		for _, p := range placeholderRE.FindAllString(text, -1) {
			used[p] = true
		}
	}
	defined := map[string]bool{}
	for p := range e.names {
		defined[p] = true
	}
	for p := range e.values {
		defined[p] = true
	}
	for p := range used {
		if !defined[p] {
			t.Errorf("placeholder %s used but not defined in %q", p, texts)
		}
	}
	for p := range defined {
		if !used[p] {
			t.Errorf("placeholder %s defined but unused in %q", p, texts)
		}
	}
	for p, attr := range e.names {
		if !strings.HasPrefix(p, "#") || attr == "" {
			t.Errorf("bad name placeholder %s -> %q", p, attr)
		}
	}
	for p, v := range e.values {
		if !strings.HasPrefix(p, ":") || v == nil {
			t.Errorf("bad value placeholder %s -> %v", p, v)
		}
	}
}

// applyUpdate applies an update expression to a copy of item the way
// DynamoDB would, for the subset of the grammar writeUpdate uses. It fails
// on overlapping paths, which DynamoDB rejects.
func applyUpdate(t *testing.T, item map[string]types.AttributeValue, e *expression, expr string) map[string]types.AttributeValue {
	t.Helper()
	out := maps.Clone(item)
	if out == nil {
		out = map[string]types.AttributeValue{}
	}
	touched := map[string]bool{}
	for _, u := range parseUpdate(t, expr) {
		attr, ok := resolveName(e, u.name)
		if !ok {
			t.Fatalf("%q: name %s undefined", expr, u.name)
		}
		if touched[attr] {
			t.Fatalf("%q: attribute %s appears twice (overlapping paths)", expr, attr)
		}
		touched[attr] = true
		var v types.AttributeValue
		if u.value != "" {
			if v, ok = e.values[u.value]; !ok {
				t.Fatalf("%q: value %s undefined", expr, u.value)
			}
		}
		switch u.action {
		case "SET":
			out[attr] = v
		case "REMOVE":
			delete(out, attr)
		case "ADD":
			add, ok := v.(*types.AttributeValueMemberN)
			if !ok {
				t.Fatalf("%q: ADD of a non-number %T", expr, v)
			}
			sum, _ := strconv.ParseInt(add.Value, 10, 64)
			if cur, ok := out[attr]; ok {
				n, ok := cur.(*types.AttributeValueMemberN)
				if !ok {
					t.Fatalf("ADD to %s of type %s", attr, typeName(cur))
				}
				prev, _ := strconv.ParseInt(n.Value, 10, 64)
				sum += prev
			}
			out[attr] = nv(strconv.FormatInt(sum, 10))
		}
	}
	return out
}

func avEqual(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(a.Value, b.Value)
	}
	return false
}

// evalCondition evaluates the condition expressions the key schema builds:
// terms attribute_exists(#n), attribute_not_exists(#n), #n = :v and
// size(#n) = :v (or <, >), NOT, parentheses, AND and OR, AND binding
// tighter, as in DynamoDB.
func evalCondition(t *testing.T, item map[string]types.AttributeValue, e *expression, cond string) bool {
	t.Helper()
	c := &condEval{t: t, item: item, e: e, cond: cond, rest: cond}
	v := c.or()
	if strings.TrimSpace(c.rest) != "" {
		t.Fatalf("condition %q: cannot evaluate %q", cond, c.rest)
	}
	return v
}

// condEval is evalCondition's parser: rest is what is left to read.
type condEval struct {
	t          *testing.T
	item       map[string]types.AttributeValue
	e          *expression
	cond, rest string
}

func (c *condEval) eat(tok string) bool {
	r := strings.TrimLeft(c.rest, " ")
	if !strings.HasPrefix(r, tok) {
		return false
	}
	c.rest = r[len(tok):]
	return true
}

func (c *condEval) or() bool {
	v := c.and()
	for c.eat("OR ") {
		w := c.and()
		v = v || w
	}
	return v
}

func (c *condEval) and() bool {
	v := c.term()
	for c.eat("AND ") {
		w := c.term()
		v = v && w
	}
	return v
}

func (c *condEval) term() bool {
	switch {
	case c.eat("NOT "):
		return !c.term()
	case c.eat("("):
		v := c.or()
		if !c.eat(")") {
			c.t.Fatalf("condition %q: unbalanced at %q", c.cond, c.rest)
		}
		return v
	case c.eat("attribute_exists("):
		_, ok := c.item[c.name()]
		c.eat(")")
		return ok
	case c.eat("attribute_not_exists("):
		_, ok := c.item[c.name()]
		c.eat(")")
		return !ok
	case c.eat("size("):
		attr := c.name()
		c.eat(")")
		n := 0
		switch v := c.item[attr].(type) {
		case *types.AttributeValueMemberL:
			n = len(v.Value)
		case *types.AttributeValueMemberS:
			n = len(v.Value)
		}
		op, want := c.compare()
		size, _ := strconv.Atoi(want.(*types.AttributeValueMemberN).Value)
		switch op {
		case "=":
			return n == size
		case "<":
			return n < size
		case ">":
			return n > size
		}
	}
	attr := c.name()
	op, want := c.compare()
	if op != "=" {
		c.t.Fatalf("condition %q: cannot evaluate %q %s", c.cond, attr, op)
	}
	return avEqual(c.item[attr], want)
}

// token reads a placeholder: up to the next space or parenthesis.
func (c *condEval) token() string {
	r := strings.TrimLeft(c.rest, " ")
	i := strings.IndexAny(r, " )")
	if i < 0 {
		i = len(r)
	}
	c.rest = r[i:]
	return r[:i]
}

// name reads a #name placeholder and returns the attribute it stands for.
func (c *condEval) name() string {
	tok := c.token()
	attr, ok := resolveName(c.e, tok)
	if !ok {
		c.t.Fatalf("condition %q: cannot evaluate the term %q", c.cond, tok)
	}
	return attr
}

// compare reads an operator and a :value placeholder.
func (c *condEval) compare() (string, types.AttributeValue) {
	for _, op := range []string{"=", "<", ">"} {
		if c.eat(op + " ") {
			tok := c.token()
			v, ok := c.e.values[tok]
			if !ok {
				c.t.Fatalf("condition %q: cannot evaluate the value %q", c.cond, tok)
			}
			return op, v
		}
	}
	c.t.Fatalf("condition %q: no operator at %q", c.cond, c.rest)
	return "", nil
}

// build returns the expressions Create (expect == nil) or Update sends.
func build(keys keySchema, rec resourcelock.Record, expect *resourcelock.Precondition) (e *expression, upd, cond string) {
	e = newExpression()
	if expect == nil {
		upd = writeUpdate(e, rec, true)
		cond = keys.createCondition(e)
	} else {
		upd = writeUpdate(e, rec, expect.HolderIdentity == "")
		cond = keys.updateCondition(e, *expect)
	}
	return e, upd, cond
}

func TestWriteUpdateRoundTrip(t *testing.T) {
	golden := GoldenJavaItems(t)
	priors := map[string]map[string]types.AttributeValue{
		"absent":          {"key": sv("lock")},
		"java held":       golden[GoldenHeld],
		"java released":   golden[GoldenReleasedKept],
		"dynalease full":  validItem(),
		"dynalease freed": func() map[string]types.AttributeValue { m := validItem(); m[attrReleased] = sv("1"); return m }(),
	}
	full := resourcelock.Record{RVN: "new-rvn", LeaseDuration: 2*time.Second + time.Nanosecond, AcquireTime: testAcquire.Add(time.Microsecond), RenewTime: testRenew, Data: []byte("new")}
	bare := resourcelock.Record{RVN: "new-rvn", LeaseDuration: time.Second}
	released := full
	released.Released = true
	released.Data = nil
	records := map[string]resourcelock.Record{"full": full, "bare": bare, "released": released}
	expects := map[string]*resourcelock.Precondition{
		"create":   nil,
		"takeover": {RVN: "old"},
		"renewal":  {RVN: "old", HolderIdentity: "me"},
	}
	keys := []keySchema{{partitionKey: "key"}, {partitionKey: "pk", sortKey: "sk"}}

	for pname, prior := range priors {
		for rname, rec := range records {
			for ename, expect := range expects {
				for _, ks := range keys {
					t.Run(pname+"/"+rname+"/"+ename+"/"+ks.partitionKey, func(t *testing.T) {
						want, err := prepareAs("me", rec)
						if err != nil {
							t.Fatal(err)
						}
						e, upd, cond := build(ks, want, expect)
						checkPlaceholders(t, e, upd, cond)
						got := applyUpdate(t, prior, e, upd)

						acquiring := expect == nil || expect.HolderIdentity == ""
						var priorTransitions int64
						if n, ok := prior[attrTransitions].(*types.AttributeValueMemberN); ok {
							priorTransitions, _ = strconv.ParseInt(n.Value, 10, 64)
						}
						want.Acquisitions = priorTransitions
						if v, ok := prior[attrAcquisition].(*types.AttributeValueMemberS); ok {
							want.AcquisitionID = v.Value
						}
						if acquiring {
							want.Acquisitions++
							want.AcquisitionID = want.RVN
						}
						dec, err := decodeRecord(got)
						if err != nil {
							t.Fatalf("decoding the written item: %v", err)
						}
						if !record.Equal(dec, want) {
							t.Fatalf("written item decodes to\n %+v\nwant\n %+v\nitem %v", dec, want, got)
						}
						// Only our attributes change; the key stays.
						for attr, v := range prior {
							if !slices.Contains(reservedAttributes, attr) && !avEqual(got[attr], v) {
								t.Errorf("attribute %s changed from %v to %v", attr, v, got[attr])
							}
						}
						checkJavaTypes(t, got, want)
					})
				}
			}
		}
	}
}

// checkJavaTypes checks the attribute types of a written item against the
// Java client's layout and ours.
func checkJavaTypes(t *testing.T, item map[string]types.AttributeValue, rec resourcelock.Record) {
	t.Helper()
	want := map[string]types.AttributeValue{
		attrOwner: sv(rec.HolderIdentity),
		attrLease: sv(strconv.FormatInt(rec.LeaseDuration.Milliseconds(), 10)),
		attrRVN:   sv(rec.RVN),
	}
	if rec.Data != nil {
		want[attrData] = &types.AttributeValueMemberB{Value: rec.Data}
	}
	if rec.Released {
		want[attrReleased] = sv("1")
	}
	if !rec.AcquireTime.IsZero() {
		want[attrAcquireTime] = sv(rec.AcquireTime.Format("2006-01-02T15:04:05.000Z"))
	}
	if !rec.RenewTime.IsZero() {
		want[attrRenewTime] = sv(rec.RenewTime.Format("2006-01-02T15:04:05.000Z"))
	}
	if rec.Acquisitions != 0 {
		want[attrTransitions] = nv(strconv.FormatInt(rec.Acquisitions, 10))
	}
	if rec.AcquisitionID != "" {
		want[attrAcquisition] = sv(rec.AcquisitionID)
	}
	if rec.FenceGeneration != 0 {
		want[attrGeneration] = nv(strconv.FormatInt(rec.FenceGeneration, 10))
	}
	for _, attr := range reservedAttributes {
		w, wok := want[attr]
		g, gok := item[attr]
		if wok != gok || (wok && !avEqual(g, w)) {
			t.Errorf("attribute %s = %v (present %v), want %v (present %v)", attr, g, gok, w, wok)
		}
	}
}

func TestCreateCondition(t *testing.T) {
	golden := GoldenJavaItems(t)
	mine := validItem()
	myReleased := validItem()
	myReleased[attrReleased] = sv("1")
	notOne := validItem()
	notOne[attrReleased] = sv("0")
	for name, tc := range map[string]struct {
		item map[string]types.AttributeValue
		want bool
	}{
		"absent":               {map[string]types.AttributeValue{}, true},
		"java held":            {golden[GoldenHeld], false},
		"java heartbeat":       {golden[GoldenHeartbeat], false},
		"java released":        {golden[GoldenReleasedKept], true},
		"ours held":            {mine, false},
		"ours released":        {myReleased, true},
		"isReleased not \"1\"": {notOne, false},
		"ours released, waiters queued": {func() map[string]types.AttributeValue {
			m := maps.Clone(myReleased)
			m[attrQueue] = &types.AttributeValueMemberL{Value: []types.AttributeValue{sv("w")}}
			return m
		}(), false},
		"ours released, queue empty": {func() map[string]types.AttributeValue {
			m := maps.Clone(myReleased)
			m[attrQueue] = &types.AttributeValueMemberL{}
			return m
		}(), true},
	} {
		rec, _ := prepareAs("me", resourcelock.Record{RVN: "r", LeaseDuration: time.Second})
		e, _, cond := build(keySchema{partitionKey: "key"}, rec, nil)
		if got := evalCondition(t, tc.item, e, cond); got != tc.want {
			t.Errorf("%s: create condition %q admits = %v, want %v", name, cond, got, tc.want)
		}
	}
}

func TestUpdateCondition(t *testing.T) {
	held := GoldenJavaItems(t)[GoldenHeld]
	heldRVN := "eaada884-0b78-4ed5-9fa1-e3d90b113f0f"
	for name, tc := range map[string]struct {
		item   map[string]types.AttributeValue
		expect resourcelock.Precondition
		want   bool
	}{
		"takeover on the RVN":          {held, resourcelock.Precondition{RVN: heldRVN}, true},
		"takeover on another RVN":      {held, resourcelock.Precondition{RVN: "other"}, false},
		"takeover of an absent record": {map[string]types.AttributeValue{}, resourcelock.Precondition{RVN: heldRVN}, false},
		"renewal by the owner":         {held, resourcelock.Precondition{RVN: heldRVN, HolderIdentity: goldenHeldOwner}, true},
		"renewal naming another owner": {held, resourcelock.Precondition{RVN: heldRVN, HolderIdentity: "someone"}, false},
		"renewal on another RVN":       {held, resourcelock.Precondition{RVN: "other", HolderIdentity: goldenHeldOwner}, false},
		"renewal of a row marked released behind the holder's back": {
			func() map[string]types.AttributeValue { m := maps.Clone(held); m[attrReleased] = sv("1"); return m }(),
			resourcelock.Precondition{RVN: heldRVN, HolderIdentity: goldenHeldOwner}, false},
		"takeover of a released row on its RVN": {
			func() map[string]types.AttributeValue { m := maps.Clone(held); m[attrReleased] = sv("1"); return m }(),
			resourcelock.Precondition{RVN: heldRVN}, true},
	} {
		rec, _ := prepareAs("me", resourcelock.Record{RVN: "r", LeaseDuration: time.Second})
		e, upd, cond := build(keySchema{partitionKey: "key"}, rec, &tc.expect)
		checkPlaceholders(t, e, upd, cond)
		if got := evalCondition(t, tc.item, e, cond); got != tc.want {
			t.Errorf("%s: update condition %q admits = %v, want %v", name, cond, got, tc.want)
		}
	}
}

// prepareAs prepares rec for a write by holder id.
func prepareAs(id string, rec resourcelock.Record) (resourcelock.Record, error) {
	rec.HolderIdentity = id
	rec, _, err := record.Prepare(resourcelock.Key{Partition: "k"}, rec, rows.WriteOptions{})
	return rec, err
}

func TestLeaseRoundsUpToMillisecond(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		0:                           0,
		time.Nanosecond:             time.Millisecond,
		time.Millisecond - 1:        time.Millisecond,
		time.Millisecond:            time.Millisecond,
		time.Millisecond + 1:        2 * time.Millisecond,
		1500 * time.Microsecond:     2 * time.Millisecond,
		time.Hour + time.Nanosecond: time.Hour + time.Millisecond,
		6 * time.Second:             6 * time.Second,
		record.MaxLeaseDuration:     record.MaxLeaseDuration,
		record.MaxLeaseDuration - time.Nanosecond: record.MaxLeaseDuration,
	} {
		if in <= 0 {
			continue
		}
		rec, err := prepareAs("me", resourcelock.Record{RVN: "r", LeaseDuration: in})
		if err != nil {
			t.Fatalf("prepareWrite lease %v: %v", in, err)
		}
		if rec.LeaseDuration != want {
			t.Errorf("prepareWrite lease %v = %v, want %v", in, rec.LeaseDuration, want)
		}
		e := newExpression()
		item := applyUpdate(t, nil, e, writeUpdate(e, rec, true))
		ms := strconv.FormatInt(want.Milliseconds(), 10)
		if !avEqual(item[attrLease], sv(ms)) {
			t.Errorf("lease %v written as %v, want S %q", in, item[attrLease], ms)
		}
	}
}

// A write that prepareWrite accepts must be readable afterwards: a record
// nobody can decode would block every reader of the lock.
func TestAcceptedWritesAreReadable(t *testing.T) {
	leases := []time.Duration{
		time.Nanosecond, time.Hour, 100 * 365 * 24 * time.Hour,
		record.MaxLeaseDuration, record.MaxLeaseDuration + 1, 1 << 62, math.MaxInt64 - 1, math.MaxInt64,
	}
	times := []time.Time{
		{}, testAcquire,
		time.Date(1, 1, 1, 0, 0, 0, 1_000_000, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(1<<40, 0),
	}
	check := func(t *testing.T, in resourcelock.Record) {
		t.Helper()
		rec, err := prepareAs("me", in)
		if err != nil {
			if !errors.Is(err, dynalease.ErrInvalid) {
				t.Errorf("prepareAs(%+v) = %v, want nil or dynalease.ErrInvalid", in, err)
			}
			return
		}
		e := newExpression()
		item := applyUpdate(t, nil, e, writeUpdate(e, rec, false))
		got, err := decodeRecord(item)
		if err != nil {
			t.Errorf("write of %+v accepted but the item is unreadable: %v", in, err)
			return
		}
		if !record.Equal(got, rec) {
			t.Errorf("write of %+v reads back as %+v, want %+v", in, got, rec)
		}
	}
	for _, lease := range leases {
		check(t, resourcelock.Record{RVN: "r", LeaseDuration: lease})
	}
	for _, at := range times {
		check(t, resourcelock.Record{RVN: "r", LeaseDuration: time.Second, AcquireTime: at, RenewTime: at})
	}
	// The limits themselves are accepted.
	if _, err := prepareAs("me", resourcelock.Record{RVN: "r", LeaseDuration: record.MaxLeaseDuration}); err != nil {
		t.Errorf("lease of record.MaxLeaseDuration refused: %v", err)
	}
	if _, err := decodeRecord(map[string]types.AttributeValue{
		attrOwner: sv("me"), attrRVN: sv("r"), attrLease: sv(strconv.FormatInt(record.MaxLeaseDuration.Milliseconds(), 10)),
	}); err != nil {
		t.Errorf("lease of record.MaxLeaseDuration unreadable: %v", err)
	}
}

// An entry of the candidates map that cannot be read is left out; the row
// and its other entries read as they are.
func TestDecodeCandidatesSkipsWhatItCannotRead(t *testing.T) {
	item := map[string]types.AttributeValue{
		attrCandidates: &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"b-good": encodeCandidate(rows.Candidate{Identity: "b", Priority: -3, RVN: "r"}),
			"a-text": &types.AttributeValueMemberS{Value: "not a map"},
			"c-part": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{candidateIdentity: s("c")}},
			"d-prio": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				candidateIdentity: s("d"), candidateRVN: s("r"), candidatePriority: &types.AttributeValueMemberN{Value: "1.5"}}},
		}},
	}
	got, err := decodeCandidates(item)
	want := []rows.Candidate{{Ticket: "b-good", Identity: "b", Priority: -3, RVN: "r"}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("decodeCandidates = %+v, %v; want %+v", got, err, want)
	}
	if _, err := decodeCandidates(map[string]types.AttributeValue{attrCandidates: s("x")}); !errors.Is(err, resourcelock.ErrPermanent) {
		t.Fatalf("a candidates attribute that is not a map: %v, want ErrPermanent", err)
	}
}
