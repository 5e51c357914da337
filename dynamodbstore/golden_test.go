package dynamodbstore

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// goldenJavaJSON holds the items of the project's golden file
// java-lock-client-items.json: items written by the AWS Java DynamoDB Lock
// Client 1.1.0 into a table keyed by "key", in DynamoDB JSON. They are
// copied here so the tests do not depend on files outside the module.
const goldenJavaJSON = `{
  "held_after_acquire": {"ownerName": {"S": "host-b.example-9d2e"}, "recordVersionNumber": {"S": "eaada884-0b78-4ed5-9fa1-e3d90b113f0f"}, "data": {"B": "amF2YTpob3N0LWIuZXhhbXBsZS05ZDJl"}, "key": {"S": "customer-7"}, "leaseDuration": {"S": "6000"}},
  "held_after_one_heartbeat": {"data": {"B": "amF2YTpob3N0LWIuZXhhbXBsZS05ZDJl"}, "ownerName": {"S": "host-b.example-9d2e"}, "recordVersionNumber": {"S": "ae65fc19-b58d-4380-a45f-7273036e9140"}, "key": {"S": "customer-7"}, "leaseDuration": {"S": "6000"}},
  "released_row_kept": {"data": {"B": "amF2YTpob3N0LWEuZXhhbXBsZS0zZjFj"}, "ownerName": {"S": "host-a.example-3f1c"}, "recordVersionNumber": {"S": "4a359dcd-62df-466e-ab75-0ecd2c158288"}, "isReleased": {"S": "1"}, "key": {"S": "customer-42"}, "leaseDuration": {"S": "20000"}}
}`

// Names of the golden items.
const (
	GoldenHeld          = "held_after_acquire"
	GoldenHeartbeat     = "held_after_one_heartbeat"
	GoldenReleasedKept  = "released_row_kept"
	goldenHeldOwner     = "host-b.example-9d2e"
	goldenReleasedOwner = "host-a.example-3f1c"
)

// GoldenJavaItems returns fresh copies of the items the AWS Java DynamoDB
// Lock Client wrote, by name (GoldenHeld, GoldenHeartbeat,
// GoldenReleasedKept). It is exported for the external test package.
func GoldenJavaItems(t testing.TB) map[string]map[string]types.AttributeValue {
	t.Helper()
	var raw map[string]map[string]map[string]string
	if err := json.Unmarshal([]byte(goldenJavaJSON), &raw); err != nil {
		t.Fatalf("golden items: %v", err)
	}
	items := make(map[string]map[string]types.AttributeValue, len(raw))
	for name, attrs := range raw {
		item := make(map[string]types.AttributeValue, len(attrs))
		for attr, typed := range attrs {
			if len(typed) != 1 {
				t.Fatalf("golden item %s: attribute %s has %d types", name, attr, len(typed))
			}
			for typ, v := range typed {
				switch typ {
				case "S":
					item[attr] = &types.AttributeValueMemberS{Value: v}
				case "N":
					item[attr] = &types.AttributeValueMemberN{Value: v}
				case "B":
					b, err := base64.StdEncoding.DecodeString(v)
					if err != nil {
						t.Fatalf("golden item %s: attribute %s: %v", name, attr, err)
					}
					item[attr] = &types.AttributeValueMemberB{Value: b}
				default:
					t.Fatalf("golden item %s: attribute %s has unexpected type %s", name, attr, typ)
				}
			}
		}
		items[name] = item
	}
	return items
}
