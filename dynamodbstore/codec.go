package dynamodbstore

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// Attribute names of a lock item. The first six are the AWS Java DynamoDB
// Lock Client's and keep its types; the rest are dynalease's own and an item
// without them still decodes.
const (
	attrOwner       = "ownerName"           // S
	attrLease       = "leaseDuration"       // S, milliseconds in decimal digits
	attrRVN         = "recordVersionNumber" // S
	attrData        = "data"                // B, optional
	attrReleased    = "isReleased"          // S "1", only while released
	attrTransitions = "leaderTransitions"   // N, optional
	attrAcquireTime = "acquireTime"         // S, RFC 3339 UTC, optional
	attrRenewTime   = "renewTime"           // S, RFC 3339 UTC, optional
	attrGeneration  = "fenceGeneration"     // N, optional
	attrAcquisition = "acquisitionId"       // S, optional
	attrQueue       = "dynaleaseQueue"      // L of M, optional: the waiters
	attrHandedTo    = "dynaleaseHandoff"    // S, optional: the ticket a release handed the lease to
	attrReaders     = "dynaleaseReaders"    // M of M, optional: the readers of a row held by readers
	attrUpgrader    = "dynaleaseUpgrader"   // S, optional: the ticket of its one upgradeable reader
	attrCandidates  = "dynaleaseCandidates" // M of M, optional: the candidates for election on the row

	releasedValue = "1"
	timeLayout    = "2006-01-02T15:04:05.000Z07:00"
)

// reservedAttributes are the attribute names a table's key may not use.
var reservedAttributes = []string{
	attrOwner, attrLease, attrRVN, attrData, attrReleased,
	attrTransitions, attrAcquireTime, attrRenewTime, attrGeneration, attrAcquisition,
	attrQueue, attrHandedTo, attrReaders, attrUpgrader, attrCandidates,
}

// expression collects an update or condition expression with its attribute
// name and value placeholders, so that only placeholders actually used are
// sent (DynamoDB rejects unused ones). The item's own attributes (the
// attr… constants, none of them a DynamoDB reserved word) are written as
// they are; every other name (the table's key attributes, the TTL
// attribute, an application's attributes) gets a placeholder. Fewer
// placeholders make smaller requests, which the SDK encodes and signs
// faster.
type expression struct {
	names  map[string]string
	values map[string]types.AttributeValue
	attrs  []string // attrs[i] is the attribute that placeholder i names
}

func newExpression() *expression {
	return &expression{names: make(map[string]string, 4), values: make(map[string]types.AttributeValue, 12)}
}

// literalAttributes are the attribute names an expression may use as they
// are: plain identifiers that are not DynamoDB reserved words.
var literalAttributes = map[string]bool{
	attrOwner: true, attrLease: true, attrRVN: true, attrReleased: true,
	attrTransitions: true, attrAcquireTime: true, attrRenewTime: true, attrGeneration: true,
	attrAcquisition: true, attrQueue: true, attrHandedTo: true, attrReaders: true, attrUpgrader: true,
	attrCandidates: true,
}

// Placeholders for the first names and values of an expression, made once.
var namePlaceholders, valuePlaceholders = placeholders("#n"), placeholders(":v")

func placeholders(prefix string) [16]string {
	var p [16]string
	for i := range p {
		p[i] = prefix + strconv.Itoa(i)
	}
	return p
}

func placeholder(table *[16]string, prefix string, i int) string {
	if i < len(table) {
		return table[i]
	}
	return prefix + strconv.Itoa(i)
}

// name returns how the expression refers to attribute attr: attr itself
// when it is one of literalAttributes, else its placeholder.
func (e *expression) name(attr string) string {
	if literalAttributes[attr] {
		return attr
	}
	for i, a := range e.attrs {
		if a == attr {
			return placeholder(&namePlaceholders, "#n", i)
		}
	}
	p := placeholder(&namePlaceholders, "#n", len(e.attrs))
	e.attrs = append(e.attrs, attr)
	e.names[p] = attr
	return p
}

// value returns a new placeholder bound to v.
func (e *expression) value(v types.AttributeValue) string {
	p := placeholder(&valuePlaceholders, ":v", len(e.values))
	e.values[p] = v
	return p
}

// nameMap and valueMap are the placeholders to send: nil when there are
// none, since DynamoDB refuses an empty map.
func (e *expression) nameMap() map[string]string {
	if len(e.names) == 0 {
		return nil
	}
	return e.names
}

func (e *expression) valueMap() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// writeUpdate builds the update expression that stores rec. Every attribute
// of the record is set or removed explicitly, so a write leaves nothing of a
// previous holder's item behind, whoever wrote it. An acquiring write also
// counts the acquisition.
func writeUpdate(e *expression, rec resourcelock.Record, acquiring bool) string {
	return writeItemUpdate(e, keySchema{}, rec, acquiring, rows.WriteOptions{})
}

// writeItemUpdate is writeUpdate with write options: application
// attributes, data kept as it is, and the TTL attribute (set, or removed so
// that a TTL left by an earlier writer can never delete a live lease).
func writeItemUpdate(e *expression, k keySchema, rec resourcelock.Record, acquiring bool, o rows.WriteOptions) string {
	var u updateClauses
	if acquiring {
		u.set(e, attrAcquisition, s(rec.RVN))
	}
	u.set(e, attrOwner, s(rec.HolderIdentity))
	u.set(e, attrLease, s(strconv.FormatInt(rec.LeaseDuration.Milliseconds(), 10)))
	u.set(e, attrRVN, s(rec.RVN))
	switch {
	case o.KeepData:
	case len(rec.Data) > 0:
		u.set(e, attrData, &types.AttributeValueMemberB{Value: rec.Data})
	default:
		u.remove(e, attrData)
	}
	for _, name := range sortedNames(o.Attributes) {
		u.set(e, name, o.Attributes[name].(types.AttributeValue)) // checkOptions checked the type
	}
	for _, name := range sortedNames(o.Numbers) {
		u.set(e, name, &types.AttributeValueMemberN{Value: strconv.FormatInt(o.Numbers[name], 10)})
	}
	switch {
	case k.ttl == "" || o.KeepTTL:
	case o.Expires.IsZero():
		u.remove(e, k.ttl)
	default:
		u.set(e, k.ttl, &types.AttributeValueMemberN{Value: strconv.FormatInt(o.Expires.Unix(), 10)})
	}
	u.optional(e, attrHandedTo, rec.HandedTo)
	u.remove(e, attrReaders) // a row held by one holder has no readers
	u.remove(e, attrUpgrader)
	if rec.HandedTo != "" && !acquiring {
		// A hand-over is nobody's acquisition: no guard or Fence
		// conditioned on an earlier one may pass on it.
		u.remove(e, attrAcquisition)
	}
	if rec.Released {
		u.set(e, attrReleased, s(releasedValue))
	} else {
		u.remove(e, attrReleased)
	}
	u.time(e, attrAcquireTime, rec.AcquireTime)
	u.time(e, attrRenewTime, rec.RenewTime)
	dequeueRemoves(&u, e, o.Dequeue)
	if acquiring {
		return u.expression(e.name(attrTransitions) + " " + e.value(&types.AttributeValueMemberN{Value: "1"}))
	}
	return u.expression("")
}

// withBelow adds WriteOptions.Below's conditions to cond: each named
// attribute missing, or below its bound (a value of another type compares
// as false, so it refuses the write).
func withBelow(e *expression, cond string, below map[string]int64) string {
	if len(below) == 0 {
		return cond
	}
	var b strings.Builder
	b.WriteString("(")
	b.WriteString(cond)
	b.WriteString(")")
	for _, name := range sortedNames(below) {
		n := e.name(name)
		b.WriteString(" AND (attribute_not_exists(" + n + ") OR " + n + " < " +
			e.value(&types.AttributeValueMemberN{Value: strconv.FormatInt(below[name], 10)}) + ")")
	}
	return b.String()
}

// updateClauses collects the SET and REMOVE clauses of an update
// expression, in order, each in one buffer.
type updateClauses struct {
	sets, removes strings.Builder
}

func (u *updateClauses) set(e *expression, attr string, v types.AttributeValue) {
	u.setPath(e.name(attr), e.value(v))
}

// setPath adds a SET clause of a document path to a value placeholder.
func (u *updateClauses) setPath(path, value string) {
	if u.sets.Len() == 0 {
		u.sets.Grow(256)
	} else {
		u.sets.WriteString(", ")
	}
	u.sets.WriteString(path)
	u.sets.WriteString(" = ")
	u.sets.WriteString(value)
}

func (u *updateClauses) remove(e *expression, attr string) { u.removePath(e.name(attr)) }

// removePath adds a REMOVE clause for a document path.
func (u *updateClauses) removePath(path string) {
	if u.removes.Len() == 0 {
		u.removes.Grow(128)
	} else {
		u.removes.WriteString(", ")
	}
	u.removes.WriteString(path)
}

// expression returns the update expression: the SET clauses, the REMOVE
// clauses if any, and add (an ADD clause's body) unless empty.
func (u *updateClauses) expression(add string) string {
	var b strings.Builder
	b.Grow(len("SET  REMOVE  ADD ") + u.sets.Len() + u.removes.Len() + len(add))
	if u.sets.Len() > 0 {
		b.WriteString("SET ")
		b.WriteString(u.sets.String())
	}
	if u.removes.Len() > 0 {
		if u.sets.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString("REMOVE ")
		b.WriteString(u.removes.String())
	}
	if add != "" {
		b.WriteString(" ADD ")
		b.WriteString(add)
	}
	return b.String()
}

// optional sets attr to the string v, or removes it when v is empty.
func (u *updateClauses) optional(e *expression, attr, v string) {
	if v == "" {
		u.remove(e, attr)
	} else {
		u.set(e, attr, s(v))
	}
}

// time sets attr to t as records keep it, or removes it when t is zero.
func (u *updateClauses) time(e *expression, attr string, t time.Time) {
	if t.IsZero() {
		u.remove(e, attr)
	} else {
		u.set(e, attr, s(t.UTC().Format(timeLayout)))
	}
}

// createCondition admits a write when the item is absent or free
// (rows.Item.Free: released, with nobody queued).
func (k keySchema) createCondition(e *expression) string {
	return "attribute_not_exists(" + e.name(k.partitionKey) + ") OR (" + freeCondition(e) + ")"
}

// memberCreateCondition admits a many-row write's create of a member
// when the item is absent or released, whatever its queue: a set is not
// ordered against the waiters of its other keys (see rows.WriteCreate).
func (k keySchema) memberCreateCondition(e *expression) string {
	return "attribute_not_exists(" + e.name(k.partitionKey) + ") OR " +
		e.name(attrReleased) + " = " + e.value(s(releasedValue))
}

// existingReleasedCondition admits a write when the item exists and is
// free.
func (k keySchema) existingReleasedCondition(e *expression) string {
	return "attribute_exists(" + e.name(k.partitionKey) + ") AND " + freeCondition(e)
}

// freeCondition holds on an item marked released whose queue is empty.
func freeCondition(e *expression) string {
	q := e.name(attrQueue)
	return e.name(attrReleased) + " = " + e.value(s(releasedValue)) +
		" AND (attribute_not_exists(" + q + ") OR size(" + q + ") = " + e.value(&types.AttributeValueMemberN{Value: "0"}) + ")"
}

// updateCondition admits a write when the item exists and matches p.
func (k keySchema) updateCondition(e *expression, p resourcelock.Precondition) string {
	c := "attribute_exists(" + e.name(k.partitionKey) + ") AND " +
		e.name(attrRVN) + " = " + e.value(s(p.RVN))
	if p.HolderIdentity != "" {
		// A holder's own write also requires that nobody marked the row
		// released behind its back (an operator's forced release keeps
		// the RVN): that is a loss, not something to overwrite.
		c += " AND " + e.name(attrOwner) + " = " + e.value(s(p.HolderIdentity)) +
			" AND NOT " + e.name(attrReleased) + " = " + e.value(s(releasedValue))
	}
	return c
}

// removeCondition admits a delete when the item exists and carries p's RVN
// (and holder identity): unlike a holder's update, it may delete a released row.
func (k keySchema) removeCondition(e *expression, p resourcelock.Precondition) string {
	c := "attribute_exists(" + e.name(k.partitionKey) + ") AND " +
		e.name(attrRVN) + " = " + e.value(s(p.RVN))
	if p.HolderIdentity != "" {
		c += " AND " + e.name(attrOwner) + " = " + e.value(s(p.HolderIdentity))
	}
	return c
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
