package dynamodbstore

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// keySchema names a lock table's key attributes and its TTL attribute.
type keySchema struct {
	partitionKey string
	sortKey      string // empty without a sort key
	ttl          string // empty: writes leave any TTL attribute alone
}

// check validates the names; an error is a *dynalease.InvalidError naming the field
// (PartitionKey, SortKey or TTLAttribute, as Config and TableOptions call
// them).
func (s keySchema) check() error {
	for _, f := range []struct{ field, name string }{{"PartitionKeyAttribute", s.partitionKey}, {"SortKeyAttribute", s.sortKey}, {"TTLAttribute", s.ttl}} {
		for _, r := range reservedAttributes {
			if f.name == r {
				return badConfig(f.field, "is %q, a name reserved for lock data", f.name)
			}
		}
	}
	switch {
	case s.partitionKey == "":
		return badConfig("PartitionKeyAttribute", "is empty")
	case s.sortKey != "" && s.sortKey == s.partitionKey:
		return badConfig("SortKeyAttribute", "is %q, the partition key's name too", s.sortKey)
	case s.ttl != "" && (s.ttl == s.partitionKey || s.ttl == s.sortKey):
		return badConfig("TTLAttribute", "is %q, a key attribute", s.ttl)
	}
	return nil
}

// reserved reports whether attr is one of the table's own attributes,
// which rows.WriteOptions.Attributes may not name.
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
func (s keySchema) checkKey(k resourcelock.Key) error {
	if err := record.CheckKey(k); err != nil {
		return err
	}
	if s.sortKey == "" {
		if k.Sort != "" {
			return fmt.Errorf("%w: key %q has a sort key value but the table has no sort key", dynalease.ErrInvalid, k)
		}
		return nil
	}
	if k.Sort == "" {
		return fmt.Errorf("%w: key %q has no sort key value but the table has sort key %q", dynalease.ErrInvalid, k, s.sortKey)
	}
	return nil
}

// checkOptions validates write options, already checked by
// the record and options, against the schema before any request.
func (s keySchema) checkOptions(o rows.WriteOptions) error {
	for name, v := range o.Attributes {
		if s.reserved(name) {
			return fmt.Errorf("%w: attribute name %q is reserved", dynalease.ErrInvalid, name)
		}
		if _, ok := v.(types.AttributeValue); !ok {
			return fmt.Errorf("%w: attribute %q is a %T, not a types.AttributeValue", dynalease.ErrInvalid, name, v)
		}
	}
	for _, m := range []map[string]int64{o.Numbers, o.Below} {
		for name := range m {
			if s.reserved(name) {
				return fmt.Errorf("%w: attribute name %q is reserved", dynalease.ErrInvalid, name)
			}
		}
	}
	if !o.Expires.IsZero() && s.ttl == "" {
		return fmt.Errorf("%w: a TTL was given but the store has no TTL attribute", dynalease.ErrInvalid)
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
