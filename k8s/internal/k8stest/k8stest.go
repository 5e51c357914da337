// Package k8stest holds what the k8s module's tests share: a dynalease
// store on a fresh table of DynamoDB Local, and a Kubernetes REST config
// for managers that never reach an API server.
package k8stest

import (
	"testing"

	"k8s.io/client-go/rest"

	"github.com/dynalease/dynalease/dynamodbstore"
	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
)

// Store returns a store on a fresh table of the DynamoDB the tests use
// (ddbtest.Endpoint: with CI=true and none reachable, the test fails).
func Store(t *testing.T) *dynamodbstore.Store {
	t.Helper()
	c := ddbtest.Client(t)
	table := ddbtest.NewTable(t, c, ddbtest.TableSpec{})
	store, err := dynamodbstore.New(dynamodbstore.Config{Client: c, Table: table})
	if err != nil {
		t.Fatalf("dynamodbstore.New: %v", err)
	}
	return store
}

// NoAPIServer is a REST config whose server does not exist: a manager
// with no controllers and its leader election elsewhere starts, elects
// and runs its runnables without ever calling it.
func NoAPIServer() *rest.Config {
	return &rest.Config{Host: "http://127.0.0.1:1"}
}
