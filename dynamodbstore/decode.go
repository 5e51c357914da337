package dynamodbstore

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/internal/record"
	"github.com/dynalease/dynalease/internal/rows"
	"github.com/dynalease/dynalease/resourcelock"
)

// decodeRecord reads a lock item. Items written by the AWS Java DynamoDB
// Lock Client decode too; attributes of dynalease's own are optional. A
// missing required attribute, a wrong type or a malformed value is an error
// wrapping resourcelock.ErrPermanent that names the attribute.
func decodeRecord(item map[string]types.AttributeValue) (resourcelock.Record, error) {
	var rec resourcelock.Record
	var err error
	if rec.HolderIdentity, err = stringAttr(item, attrOwner, true); err != nil {
		return resourcelock.Record{}, err
	}
	if rec.RVN, err = stringAttr(item, attrRVN, true); err != nil {
		return resourcelock.Record{}, err
	}
	lease, err := stringAttr(item, attrLease, true)
	if err != nil {
		return resourcelock.Record{}, err
	}
	released, err := stringAttr(item, attrReleased, false)
	if err != nil {
		return resourcelock.Record{}, err
	}
	if rec.AcquisitionID, err = stringAttr(item, attrAcquisition, false); err != nil {
		return resourcelock.Record{}, err
	}
	if rec.HandedTo, err = stringAttr(item, attrHandedTo, false); err != nil {
		return resourcelock.Record{}, err
	}
	ms, perr := strconv.ParseInt(lease, 10, 64)
	if perr != nil || ms <= 0 || ms > record.MaxLeaseDuration.Milliseconds() {
		return resourcelock.Record{}, fmt.Errorf("%w: invalid record: %s %q is not a positive number of milliseconds", resourcelock.ErrPermanent, attrLease, lease)
	}
	rec.LeaseDuration = time.Duration(ms) * time.Millisecond
	// The Java client's condition for a released lock is equality with "1";
	// any other value does not count as released there, nor here.
	rec.Released = released == releasedValue
	if v, ok := item[attrData]; ok {
		b, ok := v.(*types.AttributeValueMemberB)
		if !ok {
			return resourcelock.Record{}, wrongType(attrData, "B", v)
		}
		if len(b.Value) > 0 {
			rec.Data = b.Value
		}
	}
	if rec.Acquisitions, err = intAttr(item, attrTransitions); err != nil {
		return resourcelock.Record{}, err
	}
	if rec.FenceGeneration, err = intAttr(item, attrGeneration); err != nil {
		return resourcelock.Record{}, err
	}
	if rec.AcquireTime, err = optionalTime(item, attrAcquireTime); err != nil {
		return resourcelock.Record{}, err
	}
	if rec.RenewTime, err = optionalTime(item, attrRenewTime); err != nil {
		return resourcelock.Record{}, err
	}
	return rec, nil
}

// decodeItem reads a whole row: its key, its record, its TTL and the
// application attributes. The key is filled in even when the record cannot
// be decoded.
func (k keySchema) decodeItem(item map[string]types.AttributeValue) (rows.Item, error) {
	var it rows.Item
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
	if it.Queue, err = decodeQueue(item); err != nil {
		return it, err
	}
	if it.Readers, err = decodeReaders(item, it.HeldByReaders()); err != nil {
		return it, err
	}
	if it.Candidates, err = decodeCandidates(item); err != nil {
		return it, err
	}
	if it.HeldByReaders() {
		if it.Upgrader, err = stringAttr(item, attrUpgrader, false); err != nil {
			return it, err
		}
	}
	for name, v := range item {
		if k.reserved(name) {
			continue
		}
		if it.Attributes == nil {
			it.Attributes = map[string]any{}
		}
		it.Attributes[name] = v
		if n, ok := v.(*types.AttributeValueMemberN); ok {
			if i, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
				if it.Numbers == nil {
					it.Numbers = map[string]int64{}
				}
				it.Numbers[name] = i
			}
		}
	}
	if v, ok := item[k.ttl]; ok && k.ttl != "" {
		n, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			return it, wrongType(k.ttl, "N", v)
		}
		secs, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			return it, fmt.Errorf("%w: invalid record: %s %q is not a number", resourcelock.ErrPermanent, k.ttl, n.Value)
		}
		it.Expires = time.Unix(int64(secs), 0).UTC()
	}
	return it, nil
}

// stringAttr returns the S attribute attr of item: "" when it is missing,
// unless required, and refused when it is empty and required.
func stringAttr(item map[string]types.AttributeValue, attr string, required bool) (string, error) {
	v, ok := item[attr]
	if !ok && !required {
		return "", nil
	}
	if !ok {
		return "", fmt.Errorf("%w: invalid record: attribute %s is missing", resourcelock.ErrPermanent, attr)
	}
	str, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		return "", wrongType(attr, "S", v)
	}
	if str.Value == "" && required {
		return "", fmt.Errorf("%w: invalid record: attribute %s is empty", resourcelock.ErrPermanent, attr)
	}
	return str.Value, nil
}

// intAttr returns the N attribute attr of item as an integer, 0 when it is
// missing.
func intAttr(item map[string]types.AttributeValue, attr string) (int64, error) {
	v, ok := item[attr]
	if !ok {
		return 0, nil
	}
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, wrongType(attr, "N", v)
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: invalid record: %s %q is not an integer", resourcelock.ErrPermanent, attr, n.Value)
	}
	return i, nil
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
	if err == nil {
		// Writes refuse the year 0: a row that carries it could not be
		// renewed or taken over by a write that keeps it.
		t, err = record.StoredTime(attr, t)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: invalid record: %s %q is not an RFC 3339 time within the years 1 to 9999", resourcelock.ErrPermanent, attr, str.Value)
	}
	return t, nil
}

func wrongType(attr, want string, v types.AttributeValue) error {
	return fmt.Errorf("%w: invalid record: attribute %s has type %s, want %s", resourcelock.ErrPermanent, attr, typeName(v), want)
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
