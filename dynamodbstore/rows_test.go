package dynamodbstore

// rs returns the rows of s, as the kernel reads and writes them.
func rs(s *Store) *rowStore { return &rowStore{s} }
