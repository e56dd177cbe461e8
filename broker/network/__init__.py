"""The Reactor: acceptor, processors, request channel, request handler pool."""
