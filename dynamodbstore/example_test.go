package dynamodbstore_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynalease/dynalease/dynamodbstore"
)

// This example creates a lock table (with a TTL attribute) and a fence
// table, and a lease on one of the lock table's rows. It needs AWS
// credentials, so it is compiled but not run.
func ExampleCreateTable() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	client := dynamodb.NewFromConfig(cfg)
	if err := dynamodbstore.CreateTable(ctx, client, "locks", dynamodbstore.TableOptions{TTLAttribute: "ttl"}); err != nil {
		fmt.Println(err)
		return
	}
	if err := dynamodbstore.CreateTable(ctx, client, "locks-fences", dynamodbstore.TableOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	lease, err := newLease(leaseConfig{
		Client: client, Table: "locks", FenceTable: "locks-fences",
		Name: "scheduler", Identity: "host-1",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(lease.Describe())
}
