"""The ZooKeeper-mode controller: election, state machines, channel to brokers (issue 4)."""
