"""Authentication and authorization: who a connection is (principal) and what it may do."""
