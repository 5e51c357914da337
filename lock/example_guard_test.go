package lock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease"
	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/lock"
)

// This example changes a balance only while holding the customer's lock:
// the update commits in one transaction with a check of the lock, so a
// worker that lost the lock while paused cannot apply it. It needs AWS
// credentials, so it is compiled but not run.
func ExampleLock_Guard() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	store, err := dynamodbstore.New(dynamodbstore.Config{
		Client: dynamodb.NewFromConfig(cfg), Table: "locks", FenceTable: "locks-fences",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	locks, err := lock.New(lock.Config{Store: store, Fencing: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locks.Close(ctx)

	l, err := locks.Acquire(ctx, "customer-42")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Release(ctx)

	err = l.Guard(ctx, store.Writes(types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String("accounts"),
		Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "42"}},
		UpdateExpression:          aws.String("ADD balance :amount SET lastToken = :token"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":amount": &types.AttributeValueMemberN{Value: "100"}, ":token": &types.AttributeValueMemberN{Value: strconv.FormatInt(l.Token(), 10)}},
	}}))
	switch {
	case errors.Is(err, dynalease.ErrLost):
		fmt.Println("lost the lock; nothing was applied")
	case err != nil:
		fmt.Println(err)
	}
}
