package ddbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DefaultPartitionKey is the partition key attribute NewTable uses when
// TableSpec.PartitionKey is empty.
const DefaultPartitionKey = "key"

// TableSpec describes the key schema of a table created by NewTable. The
// zero value means a table whose only key is the string partition key
// DefaultPartitionKey.
type TableSpec struct {
	// PartitionKey is the name of the partition (hash) key attribute;
	// empty means DefaultPartitionKey.
	PartitionKey string
	// PartitionKeyType is the type of the partition key; empty means S.
	PartitionKeyType types.ScalarAttributeType
	// SortKey is the name of the sort (range) key attribute; empty means
	// that the table has no sort key.
	SortKey string
	// SortKeyType is the type of the sort key; empty means S. It is
	// ignored when SortKey is empty.
	SortKeyType types.ScalarAttributeType
}

const (
	// tableTimeout bounds creating a table and waiting for it to become
	// ACTIVE, and separately deleting it.
	tableTimeout = 2 * time.Minute
	// maxPollInterval caps the DescribeTable polling interval, which starts
	// at 10ms and doubles: DynamoDB Local creates tables at once, the real
	// service takes seconds.
	maxPollInterval = 500 * time.Millisecond
	// maxNameStem is how many characters of the test name a table name
	// keeps, to stay readable and far below DynamoDB's 255.
	maxNameStem = 80
)

// NewTable creates a table with the key schema spec and on-demand billing,
// waits until it is ACTIVE, and returns its name. The name is unique (it is
// derived from t.Name() plus a random suffix), so parallel tests and
// repeated runs against one server do not collide. The table is deleted
// when the test and its subtests finish (t.Cleanup); a failure to delete it
// fails the test. Any error creating the table, or a table that is not
// ACTIVE within two minutes, stops the test with t.Fatal.
func NewTable(t testing.TB, c *dynamodb.Client, spec TableSpec) string {
	t.Helper()
	name := tableName(t.Name())
	input := createTableInput(name, spec)

	ctx, cancel := context.WithTimeout(t.Context(), tableTimeout)
	defer cancel()
	if _, err := c.CreateTable(ctx, input); err != nil {
		t.Fatalf("ddbtest: creating table %s: %v", name, err)
	}
	// Register the cleanup before waiting, so that a table that never
	// becomes ACTIVE is still deleted.
	t.Cleanup(func() { DeleteTable(t, c, name) })

	for wait := 10 * time.Millisecond; ; wait = min(2*wait, maxPollInterval) {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatalf("ddbtest: waiting for table %s: %v", name, err)
		}
		if out.Table.TableStatus == types.TableStatusActive {
			return name
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ddbtest: table %s is still %s after %v", name, out.Table.TableStatus, tableTimeout)
		case <-time.After(wait):
		}
	}
}

func createTableInput(name string, spec TableSpec) *dynamodb.CreateTableInput {
	pk, pkType := spec.PartitionKey, spec.PartitionKeyType
	if pk == "" {
		pk = DefaultPartitionKey
	}
	if pkType == "" {
		pkType = types.ScalarAttributeTypeS
	}
	input := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(pk), AttributeType: pkType},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash},
		},
	}
	if spec.SortKey != "" {
		skType := spec.SortKeyType
		if skType == "" {
			skType = types.ScalarAttributeTypeS
		}
		input.AttributeDefinitions = append(input.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: aws.String(spec.SortKey), AttributeType: skType})
		input.KeySchema = append(input.KeySchema,
			types.KeySchemaElement{AttributeName: aws.String(spec.SortKey), KeyType: types.KeyTypeRange})
	}
	return input
}

// deleteTable deletes the table name. It runs from t.Cleanup, after
// t.Context() has been canceled, so it uses a context of its own. A table
// the test already deleted is not an error.
// DeleteTable deletes the table name, tolerating that it no longer exists;
// other failures are reported with t.Errorf.
func DeleteTable(t testing.TB, c *dynamodb.Client, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), tableTimeout)
	defer cancel()
	_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	var notFound *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &notFound) {
		t.Errorf("ddbtest: deleting table %s: %v", name, err)
	}
}

// tableName returns a unique, valid table name for the test testName.
// DynamoDB allows 3 to 255 characters from a-z, A-Z, 0-9, '_', '-' and '.';
// everything else in the test name becomes '-'.
func tableName(testName string) string {
	var b strings.Builder
	b.WriteString("ddbtest-")
	for i, r := range testName {
		if i >= maxNameStem {
			break
		}
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '_', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:]) // crypto/rand.Read never returns an error
	b.WriteByte('-')
	b.WriteString(hex.EncodeToString(suffix[:]))
	return b.String()
}
