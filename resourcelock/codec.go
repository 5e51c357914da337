package resourcelock

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

	// DefaultPartitionKey is the partition key attribute name of a lock
	// table, as in the AWS Java DynamoDB Lock Client.
	DefaultPartitionKey = "key"

	releasedValue = "1"
	timeLayout    = "2006-01-02T15:04:05.000Z07:00"
)

// ReservedAttributes returns the names of the attributes of a lock row
// that are dynalease's or the AWS Java lock client's (key and TTL
// attributes aside): application attributes may not use them.
func ReservedAttributes() []string {
	return append([]string(nil), reservedAttributes...)
}

// reservedAttributes are the attribute names a table's key may not use.
var reservedAttributes = []string{
	attrOwner, attrLease, attrRVN, attrData, attrReleased,
	attrTransitions, attrAcquireTime, attrRenewTime, attrGeneration, attrAcquisition,
}

// DefaultTTLAttribute is the attribute a lock table's TTL is kept in.
const DefaultTTLAttribute = "ttl"

// keySchema names a lock table's key attributes and its TTL attribute.
type keySchema struct {
	partitionKey string
	sortKey      string // empty without a sort key
	ttl          string // empty: writes leave any TTL attribute alone
}

func (s keySchema) check() error {
	for _, k := range []string{s.partitionKey, s.sortKey, s.ttl} {
		for _, r := range reservedAttributes {
			if k == r {
				return fmt.Errorf("%w: key attribute name %q is reserved for lock data", ErrInvalidArgument, k)
			}
		}
	}
	if s.partitionKey == "" {
		return fmt.Errorf("%w: partition key attribute name is empty", ErrInvalidArgument)
	}
	if s.sortKey != "" && s.sortKey == s.partitionKey {
		return fmt.Errorf("%w: sort key and partition key are both %q", ErrInvalidArgument, s.sortKey)
	}
	if s.ttl != "" && (s.ttl == s.partitionKey || s.ttl == s.sortKey) {
		return fmt.Errorf("%w: TTL attribute %q is a key attribute", ErrInvalidArgument, s.ttl)
	}
	return nil
}

// reserved reports whether attr is one of the table's own attributes,
// which WriteOptions.Attributes may not name.
func (s keySchema) reserved(attr string) bool {
	if attr == s.partitionKey || (attr != "" && (attr == s.sortKey || attr == s.ttl)) {
		return true
	}
	for _, r := range reservedAttributes {
		if attr == r {
			return true
		}
	}
	return false
}

// checkKey validates a key for this schema before any request.
func (s keySchema) checkKey(k Key) error {
	if err := checkName(k.Partition); err != nil {
		return err
	}
	if s.sortKey == "" {
		if k.Sort != "" {
			return fmt.Errorf("%w: key %q has a sort key value but the table has no sort key", ErrInvalidArgument, k)
		}
		return nil
	}
	if k.Sort == "" {
		return fmt.Errorf("%w: key %q has no sort key value but the table has sort key %q", ErrInvalidArgument, k, s.sortKey)
	}
	if len(k.Sort) > 1024 {
		return fmt.Errorf("%w: sort key value is %d bytes, over DynamoDB's 1024-byte limit", ErrInvalidArgument, len(k.Sort))
	}
	return nil
}

// checkOptions validates write options before any request.
func (s keySchema) checkOptions(o WriteOptions) error {
	for name, v := range o.Attributes {
		if name == "" || s.reserved(name) {
			return fmt.Errorf("%w: attribute name %q is reserved or empty", ErrInvalidArgument, name)
		}
		if v == nil {
			return fmt.Errorf("%w: attribute %q has no value", ErrInvalidArgument, name)
		}
	}
	if !o.Expires.IsZero() {
		if s.ttl == "" {
			return fmt.Errorf("%w: a TTL was given but the store has no TTL attribute", ErrInvalidArgument)
		}
		if y := o.Expires.Year(); y < 1970 || y > 9999 {
			return fmt.Errorf("%w: TTL %v is not a plausible epoch time", ErrInvalidArgument, o.Expires)
		}
	}
	return nil
}

// itemKey returns the DynamoDB key of the lock named name (and sortValue
// when the table has a sort key).
func (s keySchema) itemKey(name, sortValue string) map[string]types.AttributeValue {
	k := map[string]types.AttributeValue{s.partitionKey: &types.AttributeValueMemberS{Value: name}}
	if s.sortKey != "" {
		k[s.sortKey] = &types.AttributeValueMemberS{Value: sortValue}
	}
	return k
}

// expression collects an update or condition expression with its attribute
// name and value placeholders, so that only placeholders actually used are
// sent (DynamoDB rejects unused ones).
type expression struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func newExpression() *expression {
	return &expression{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// name returns the placeholder for attribute attr.
func (e *expression) name(attr string) string {
	for p, a := range e.names {
		if a == attr {
			return p
		}
	}
	p := "#n" + strconv.Itoa(len(e.names))
	e.names[p] = attr
	return p
}

// value returns a new placeholder bound to v.
func (e *expression) value(v types.AttributeValue) string {
	p := ":v" + strconv.Itoa(len(e.values))
	e.values[p] = v
	return p
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// writeUpdate builds the update expression that stores rec. Every attribute
// of the record is set or removed explicitly, so a write leaves nothing of a
// previous holder's item behind, whoever wrote it. An acquiring write also
// counts the acquisition.
func writeUpdate(e *expression, rec Record, acquiring bool) string {
	return writeItemUpdate(e, keySchema{}, rec, acquiring, WriteOptions{})
}

// writeItemUpdate is writeUpdate with write options: application
// attributes, data kept as it is, and the TTL attribute (set, or removed so
// that a TTL left by an earlier writer can never delete a live lease).
func writeItemUpdate(e *expression, k keySchema, rec Record, acquiring bool, o WriteOptions) string {
	var set, remove []string
	assign := func(attr string, v types.AttributeValue) {
		set = append(set, e.name(attr)+" = "+e.value(v))
	}
	assign(attrOwner, s(rec.HolderIdentity))
	assign(attrLease, s(strconv.FormatInt(rec.LeaseDuration.Milliseconds(), 10)))
	assign(attrRVN, s(rec.RVN))
	switch {
	case o.KeepData:
	case len(rec.Data) > 0:
		assign(attrData, &types.AttributeValueMemberB{Value: rec.Data})
	default:
		remove = append(remove, e.name(attrData))
	}
	for _, name := range sortedNames(o.Attributes) {
		assign(name, o.Attributes[name])
	}
	if k.ttl != "" {
		if o.Expires.IsZero() {
			remove = append(remove, e.name(k.ttl))
		} else {
			assign(k.ttl, &types.AttributeValueMemberN{Value: strconv.FormatInt(expiresSeconds(o.Expires).Unix(), 10)})
		}
	}
	if rec.Released {
		assign(attrReleased, s(releasedValue))
	} else {
		remove = append(remove, e.name(attrReleased))
	}
	for _, t := range []struct {
		attr string
		at   time.Time
	}{{attrAcquireTime, rec.AcquireTime}, {attrRenewTime, rec.RenewTime}} {
		if t.at.IsZero() {
			remove = append(remove, e.name(t.attr))
		} else {
			assign(t.attr, s(t.at.UTC().Format(timeLayout)))
		}
	}
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	if acquiring {
		expr = strings.Replace(expr, "SET ", "SET "+e.name(attrAcquisition)+" = "+e.value(s(rec.RVN))+", ", 1)
		expr += " ADD " + e.name(attrTransitions) + " " + e.value(&types.AttributeValueMemberN{Value: "1"})
	}
	return expr
}

// createCondition admits a write when the item is absent or released.
func (k keySchema) createCondition(e *expression) string {
	return "attribute_not_exists(" + e.name(k.partitionKey) + ") OR " +
		e.name(attrReleased) + " = " + e.value(s(releasedValue))
}

// existingReleasedCondition admits a write when the item exists and is
// released.
func (k keySchema) existingReleasedCondition(e *expression) string {
	return "attribute_exists(" + e.name(k.partitionKey) + ") AND " +
		e.name(attrReleased) + " = " + e.value(s(releasedValue))
}

// updateCondition admits a write when the item exists and matches p.
func (k keySchema) updateCondition(e *expression, p Precondition) string {
	c := "attribute_exists(" + e.name(k.partitionKey) + ") AND " +
		e.name(attrRVN) + " = " + e.value(s(p.RVN))
	if p.Owner != "" {
		// A holder's own write also requires that nobody marked the row
		// released behind its back (an operator's forced release keeps
		// the RVN): that is a loss, not something to overwrite.
		c += " AND " + e.name(attrOwner) + " = " + e.value(s(p.Owner)) +
			" AND NOT " + e.name(attrReleased) + " = " + e.value(s(releasedValue))
	}
	return c
}

// removeCondition admits a delete when the item exists and carries p's RVN
// (and owner): unlike a holder's update, it may delete a released row.
func (k keySchema) removeCondition(e *expression, p Precondition) string {
	c := "attribute_exists(" + e.name(k.partitionKey) + ") AND " +
		e.name(attrRVN) + " = " + e.value(s(p.RVN))
	if p.Owner != "" {
		c += " AND " + e.name(attrOwner) + " = " + e.value(s(p.Owner))
	}
	return c
}

// decodeRecord reads a lock item. Items written by the AWS Java DynamoDB
// Lock Client decode too; attributes of dynalease's own are optional. A
// missing required attribute, a wrong type or a malformed value is an error
// wrapping ErrInvalidRecord that names the attribute.
func decodeRecord(item map[string]types.AttributeValue) (Record, error) {
	var rec Record
	var err error
	if rec.HolderIdentity, err = requiredString(item, attrOwner); err != nil {
		return Record{}, err
	}
	if rec.RVN, err = requiredString(item, attrRVN); err != nil {
		return Record{}, err
	}
	lease, err := requiredString(item, attrLease)
	if err != nil {
		return Record{}, err
	}
	ms, perr := strconv.ParseInt(lease, 10, 64)
	if perr != nil || ms <= 0 || ms > maxLeaseDuration.Milliseconds() {
		return Record{}, fmt.Errorf("%w: %s %q is not a positive number of milliseconds", ErrInvalidRecord, attrLease, lease)
	}
	rec.LeaseDuration = time.Duration(ms) * time.Millisecond

	if v, ok := item[attrData]; ok {
		b, ok := v.(*types.AttributeValueMemberB)
		if !ok {
			return Record{}, wrongType(attrData, "B", v)
		}
		if len(b.Value) > 0 {
			rec.Data = b.Value
		}
	}
	if v, ok := item[attrReleased]; ok {
		str, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return Record{}, wrongType(attrReleased, "S", v)
		}
		// The Java client's condition for a released lock is equality with
		// "1"; any other value does not count as released there, nor here.
		rec.Released = str.Value == releasedValue
	}
	if v, ok := item[attrTransitions]; ok {
		n, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			return Record{}, wrongType(attrTransitions, "N", v)
		}
		if rec.LeaderTransitions, err = strconv.ParseInt(n.Value, 10, 64); err != nil {
			return Record{}, fmt.Errorf("%w: %s %q is not an integer", ErrInvalidRecord, attrTransitions, n.Value)
		}
	}
	if v, ok := item[attrGeneration]; ok {
		n, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			return Record{}, wrongType(attrGeneration, "N", v)
		}
		if rec.FenceGeneration, err = strconv.ParseInt(n.Value, 10, 64); err != nil {
			return Record{}, fmt.Errorf("%w: %s %q is not an integer", ErrInvalidRecord, attrGeneration, n.Value)
		}
	}
	if v, ok := item[attrAcquisition]; ok {
		str, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return Record{}, wrongType(attrAcquisition, "S", v)
		}
		rec.AcquisitionID = str.Value
	}
	if rec.AcquireTime, err = optionalTime(item, attrAcquireTime); err != nil {
		return Record{}, err
	}
	if rec.RenewTime, err = optionalTime(item, attrRenewTime); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// decodeItem reads a whole row: its key, its record, its TTL and the
// application attributes. The key is filled in even when the record cannot
// be decoded.
func (k keySchema) decodeItem(item map[string]types.AttributeValue) (Item, error) {
	var it Item
	if v, ok := item[k.partitionKey].(*types.AttributeValueMemberS); ok {
		it.Key.Partition = v.Value
	}
	if v, ok := item[k.sortKey].(*types.AttributeValueMemberS); ok && k.sortKey != "" {
		it.Key.Sort = v.Value
	}
	rec, err := decodeRecord(item)
	if err != nil {
		return it, err
	}
	it.Record = rec
	for name, v := range item {
		if k.reserved(name) {
			continue
		}
		if it.Attributes == nil {
			it.Attributes = map[string]types.AttributeValue{}
		}
		it.Attributes[name] = v
	}
	if v, ok := item[k.ttl]; ok && k.ttl != "" {
		n, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			return it, wrongType(k.ttl, "N", v)
		}
		secs, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			return it, fmt.Errorf("%w: %s %q is not a number", ErrInvalidRecord, k.ttl, n.Value)
		}
		it.Expires = time.Unix(int64(secs), 0).UTC()
	}
	return it, nil
}

func sortedNames(m map[string]types.AttributeValue) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func requiredString(item map[string]types.AttributeValue, attr string) (string, error) {
	v, ok := item[attr]
	if !ok {
		return "", fmt.Errorf("%w: attribute %s is missing", ErrInvalidRecord, attr)
	}
	str, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		return "", wrongType(attr, "S", v)
	}
	if str.Value == "" {
		return "", fmt.Errorf("%w: attribute %s is empty", ErrInvalidRecord, attr)
	}
	return str.Value, nil
}

func optionalTime(item map[string]types.AttributeValue, attr string) (time.Time, error) {
	v, ok := item[attr]
	if !ok {
		return time.Time{}, nil
	}
	str, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		return time.Time{}, wrongType(attr, "S", v)
	}
	t, err := time.Parse(time.RFC3339Nano, str.Value)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s %q is not an RFC 3339 time", ErrInvalidRecord, attr, str.Value)
	}
	return normalizeTime(t), nil
}

func wrongType(attr, want string, v types.AttributeValue) error {
	return fmt.Errorf("%w: attribute %s has type %s, want %s", ErrInvalidRecord, attr, typeName(v), want)
}

// typeName returns DynamoDB's name for the type of v.
func typeName(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberM:
		return "M"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	default:
		return fmt.Sprintf("%T", v)
	}
}
