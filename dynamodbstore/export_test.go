package dynamodbstore

import "github.com/dynalease/dynalease/resourcelock"

// CheckKey checks key against the store's table schema, as every request
// does before it is sent.
func (d *Store) CheckKey(key resourcelock.Key) error { return d.keys.checkKey(key) }
