package dynamodbstore

import (
	"maps"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Fence is a condition and an update that fence a caller's own DynamoDB
// item with a fencing token (lock.Lock.Token, election.Elector.Token): the
// write is admitted only if the item has no fence yet or one no larger
// than the token (equal is admitted, so the same holder can write twice),
// and it records the token. Add Names and Values to the write's
// expression attribute maps (Merge); the placeholders are chosen not to
// clash with the caller's own.
type Fence struct {
	// Condition is `attribute_not_exists(fence) OR fence <= token`; combine
	// it with the write's own condition with AND.
	Condition string
	// Set is the SET clause `fence = token`; append it to an update's SET
	// list, or use Item for a Put.
	Set    string
	Names  map[string]string
	Values map[string]types.AttributeValue

	attribute string
	token     int64
}

// FenceWith returns the Fence of token on the attribute named attribute of
// the caller's item. It refuses an empty attribute name, and a token that
// is not positive (a lock or elector without fencing has token 0), with an
// error matching dynalease.ErrInvalid.
func FenceWith(attribute string, token int64) (Fence, error) {
	if attribute == "" {
		return Fence{}, badConfig("attribute", "fence attribute name is empty")
	}
	if token <= 0 {
		return Fence{}, badConfig("token", "fencing token %d: the lock has no fencing (lock.Config.Fencing, election.Config.Fencing)", token)
	}
	return Fence{
		Condition: "(attribute_not_exists(#dynaleaseFence) OR #dynaleaseFence <= :dynaleaseToken)",
		Set:       "#dynaleaseFence = :dynaleaseToken",
		Names:     map[string]string{"#dynaleaseFence": attribute},
		Values:    map[string]types.AttributeValue{":dynaleaseToken": &types.AttributeValueMemberN{Value: strconv.FormatInt(token, 10)}},
		attribute: attribute,
		token:     token,
	}, nil
}

// Item returns a copy of item with the fence attribute set to the token,
// for a fenced Put.
func (f Fence) Item(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(item)+1)
	maps.Copy(out, item)
	out[f.attribute] = &types.AttributeValueMemberN{Value: strconv.FormatInt(f.token, 10)}
	return out
}

// Merge adds the fence's placeholders to the write's maps, creating them
// when nil, and returns them.
func (f Fence) Merge(names map[string]string, values map[string]types.AttributeValue) (map[string]string, map[string]types.AttributeValue) {
	if names == nil {
		names = map[string]string{}
	}
	if values == nil {
		values = map[string]types.AttributeValue{}
	}
	maps.Copy(names, f.Names)
	maps.Copy(values, f.Values)
	return names, values
}
