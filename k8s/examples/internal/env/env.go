// Package env holds what both controller-runtime examples need from their
// surroundings: a DynamoDB client and a unique candidate identity.
package env

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"
)

// Identity is the pod's name (POD_NAME, from the downward API; else the
// host's) and a UUID: unique among every candidate, in every cluster, and
// across restarts, as controller-runtime's own default is.
func Identity() string {
	name := os.Getenv("POD_NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	return name + "_" + uuid.NewString()
}

// DynamoDB returns a client from the SDK's default configuration, pointed
// at DYNAMODB_ENDPOINT when it is set (DynamoDB Local).
func DynamoDB(ctx context.Context) (*dynamodb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if ep := os.Getenv("DYNAMODB_ENDPOINT"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	}), nil
}
