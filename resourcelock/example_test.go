package resourcelock_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynalease/dynalease/resourcelock"
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
	if err := resourcelock.CreateTable(ctx, client, "locks", resourcelock.TableOptions{TTLAttribute: "ttl"}); err != nil {
		fmt.Println(err)
		return
	}
	if err := resourcelock.CreateTable(ctx, client, "locks-fences", resourcelock.TableOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	lease, err := resourcelock.NewDynamoDB(resourcelock.DynamoDBConfig{
		Client: client, Table: "locks", FenceTable: "locks-fences",
		Name: "scheduler", Identity: "host-1",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(lease.Describe())
}
