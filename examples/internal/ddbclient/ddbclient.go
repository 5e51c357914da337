// Package ddbclient holds the few lines every example needs to reach
// DynamoDB: a client for DynamoDB Local or for Amazon DynamoDB, and
// creating and deleting the example's own tables.
package ddbclient

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynalease/dynalease/dynamodbstore"
)

// EndpointEnv names the environment variable that points the examples at
// DynamoDB Local (or another emulator), e.g. http://127.0.0.1:8000.
const EndpointEnv = "DYNAMODB_ENDPOINT"

// New returns a DynamoDB client. With DYNAMODB_ENDPOINT set it talks to
// that server, taken to be DynamoDB Local: any static credentials do, and
// the region comes from AWS_REGION or defaults to us-east-1. Otherwise it
// talks to Amazon DynamoDB with the usual AWS configuration (environment,
// shared config files, instance role).
//
// For the emulator's client only, the validation of the response checksum
// is turned off: DynamoDB Local omits the X-Amz-Crc32 header from error
// responses, such as the conditional-check failures that competing lock
// clients cause all the time, and the SDK would log a spurious checksum
// warning for each. Amazon DynamoDB always sends the header, so its client
// keeps the check.
func New(ctx context.Context) (*dynamodb.Client, error) {
	if endpoint := os.Getenv(EndpointEnv); endpoint != "" {
		region := os.Getenv("AWS_REGION")
		if region == "" {
			region = "us-east-1"
		}
		return dynamodb.New(dynamodb.Options{
			Region:       region,
			BaseEndpoint: aws.String(endpoint),
			Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		}, func(o *dynamodb.Options) {
			o.DisableValidateResponseChecksum = true // emulator only, see above
		}), nil
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	return dynamodb.NewFromConfig(cfg), nil
}

// CreateTable creates an on-demand table whose only key is the string
// partition key partitionKey, and waits until it is ACTIVE.
func CreateTable(ctx context.Context, c *dynamodb.Client, table, partitionKey string) error {
	return dynamodbstore.CreateTable(ctx, c, table, dynamodbstore.TableOptions{PartitionKeyAttribute: partitionKey})
}

// DeleteTable deletes table; a table that no longer exists is no error.
func DeleteTable(ctx context.Context, c *dynamodb.Client, table string) error {
	_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	var notFound *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &notFound) {
		return fmt.Errorf("deleting table %s: %w", table, err)
	}
	return nil
}
