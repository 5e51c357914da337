package ddbtest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"
)

// These tests need the DynamoDB server named by DYNAMODB_ENDPOINT; run them
// with "make test".

// recordingLogger is a smithy logger that keeps every message.
type recordingLogger struct {
	mu   sync.Mutex
	msgs []string
}

func (l *recordingLogger) Logf(c logging.Classification, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, fmt.Sprintf("%s %s", c, fmt.Sprintf(format, v...)))
}

// matching returns the recorded messages that contain substr.
func (l *recordingLogger) matching(substr string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.msgs {
		if strings.Contains(strings.ToLower(m), strings.ToLower(substr)) {
			out = append(out, m)
		}
	}
	return out
}

func withLogger(l logging.Logger) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) { o.Logger = l }
}

func item(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{DefaultPartitionKey: &types.AttributeValueMemberS{Value: key}}
}

// provokeErrors makes c fail a conditional PutItem on table and a GetItem on
// a table that does not exist, and checks that both errors arrive typed.
func provokeErrors(t *testing.T, c *dynamodb.Client, table string) {
	t.Helper()
	ctx := t.Context()
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("a")}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(table),
		Item:                     item("a"),
		ConditionExpression:      aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#k": DefaultPartitionKey},
	})
	var condFailed *types.ConditionalCheckFailedException
	if !errors.As(err, &condFailed) {
		t.Errorf("conditional PutItem on an existing item: err = %v, want a *types.ConditionalCheckFailedException", err)
	}

	_, err = c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table + "-missing"), Key: item("a")})
	var notFound *types.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Errorf("GetItem on a missing table: err = %v, want a *types.ResourceNotFoundException", err)
	}
}

func TestClientListTables(t *testing.T) {
	t.Parallel()
	c := Client(t)
	if _, err := c.ListTables(t.Context(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("ListTables: %v", err)
	}
}

// TestClientErrorsTypedWithoutChecksumWarning checks the contract of
// EmulatorOptions (which Client applies): errors from DynamoDB Local come
// through typed, and no checksum warning is logged.
func TestClientErrorsTypedWithoutChecksumWarning(t *testing.T) {
	t.Parallel()
	logger := &recordingLogger{}
	c := Client(t, withLogger(logger))
	table := NewTable(t, c, TableSpec{})

	provokeErrors(t, c, table)

	if msgs := logger.matching("checksum"); len(msgs) > 0 {
		t.Errorf("the SDK logged checksum warnings:\n%s", strings.Join(msgs, "\n"))
	}
}

// TestChecksumWarningWithoutEmulatorOptions is the control for the test
// above: it shows that the warning EmulatorOptions suppresses does occur
// without it, and so that the recording logger can see it. If it starts
// failing after an SDK or DynamoDB Local upgrade, the problem may be fixed
// and EmulatorOptions may no longer be needed.
func TestChecksumWarningWithoutEmulatorOptions(t *testing.T) {
	t.Parallel()
	logger := &recordingLogger{}
	c := Client(t, withLogger(logger), func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = false
	})
	table := NewTable(t, c, TableSpec{})

	provokeErrors(t, c, table)

	const warning = "response did not match expected checksum"
	msgs := logger.matching(warning)
	if len(msgs) == 0 {
		t.Fatalf("no %q warning was logged with checksum validation on; "+
			"if DynamoDB Local or the SDK no longer cause it, EmulatorOptions may be unnecessary", warning)
	}
	t.Logf("reproduced (%d times): %s", len(msgs), msgs[0])
}

func describe(t *testing.T, c *dynamodb.Client, table string) *types.TableDescription {
	t.Helper()
	out, err := c.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("DescribeTable %s: %v", table, err)
	}
	return out.Table
}

// keySchema renders a table's key schema with attribute types, e.g.
// "key HASH S, sk RANGE N".
func keySchema(d *types.TableDescription) string {
	attrTypes := map[string]types.ScalarAttributeType{}
	for _, a := range d.AttributeDefinitions {
		attrTypes[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	var parts []string
	for _, k := range d.KeySchema {
		name := aws.ToString(k.AttributeName)
		parts = append(parts, fmt.Sprintf("%s %s %s", name, k.KeyType, attrTypes[name]))
	}
	return strings.Join(parts, ", ")
}

func TestNewTableDefaults(t *testing.T) {
	t.Parallel()
	c := Client(t)
	table := NewTable(t, c, TableSpec{})

	d := describe(t, c, table)
	if d.TableStatus != types.TableStatusActive {
		t.Errorf("status %s, want ACTIVE", d.TableStatus)
	}
	if got, want := keySchema(d), "key HASH S"; got != want {
		t.Errorf("key schema %q, want %q", got, want)
	}
	if d.BillingModeSummary != nil && d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("billing mode %s, want PAY_PER_REQUEST", d.BillingModeSummary.BillingMode)
	}

	if _, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("x")}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	out, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: item("x"), ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		t.Fatalf("GetItem = %v, %v; want the item just put", out, err)
	}
}

func TestNewTableSortKey(t *testing.T) {
	t.Parallel()
	c := Client(t)
	table := NewTable(t, c, TableSpec{
		PartitionKey:     "pk",
		PartitionKeyType: types.ScalarAttributeTypeB,
		SortKey:          "sk",
		SortKeyType:      types.ScalarAttributeTypeN,
	})
	if got, want := keySchema(describe(t, c, table)), "pk HASH B, sk RANGE N"; got != want {
		t.Errorf("key schema %q, want %q", got, want)
	}

	table = NewTable(t, c, TableSpec{SortKey: "sk"})
	if got, want := keySchema(describe(t, c, table)), "key HASH S, sk RANGE S"; got != want {
		t.Errorf("key schema %q, want %q", got, want)
	}
}

func TestNewTableUniqueAndDeletedOnCleanup(t *testing.T) {
	t.Parallel()
	c := Client(t)
	var first, second string
	// Odd characters in the subtest name must not yield an invalid table name.
	t.Run("sub test/with*odd chars", func(t *testing.T) {
		first = NewTable(t, c, TableSpec{})
		second = NewTable(t, c, TableSpec{})
	})
	if first == second {
		t.Fatalf("two NewTable calls in one test both returned %q", first)
	}
	for _, table := range []string{first, second} {
		_, err := c.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		var notFound *types.ResourceNotFoundException
		if !errors.As(err, &notFound) {
			t.Errorf("DescribeTable %s after its test ended: err = %v, want ResourceNotFoundException", table, err)
		}
	}
}

// TestNewTableToleratesDeletedTable checks that the cleanup does not fail a
// test that deleted its table itself.
func TestNewTableToleratesDeletedTable(t *testing.T) {
	t.Parallel()
	c := Client(t)
	table := NewTable(t, c, TableSpec{})
	if _, err := c.DeleteTable(t.Context(), &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
		t.Fatalf("DeleteTable: %v", err)
	}
}
