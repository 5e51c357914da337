package dynamodbstore

import (
	"errors"
	"testing"

	"github.com/dynalease/dynalease"
)

func TestFenceExpression(t *testing.T) {
	fence, err := FenceWith("fence", 0x100000002)
	if err != nil {
		t.Fatal(err)
	}
	names, values := fence.Merge(map[string]string{"#n": "name"}, nil)
	if names["#dynaleaseFence"] != "fence" || names["#n"] != "name" || len(values) != 1 {
		t.Fatalf("merged %v %v", names, values)
	}
	item := fence.Item(nil)
	if n, ok := item["fence"]; !ok || n == nil {
		t.Fatalf("fenced item %v", item)
	}
}

func TestFenceWithRefusesNoTokenAndNoAttribute(t *testing.T) {
	for _, c := range []struct {
		attribute string
		token     int64
	}{{"fence", 0}, {"fence", -1}, {"", 1}} {
		if _, err := FenceWith(c.attribute, c.token); !errors.Is(err, dynalease.ErrInvalid) {
			t.Errorf("FenceWith(%q, %d) = %v, want dynalease.ErrInvalid", c.attribute, c.token, err)
		}
	}
}
