"""Client quotas (Kafka 2.8's ClientQuotaManager family): produce/fetch byte rates and request percentages
per user, client-id or both, with Kafka's precedence, throttling by muting the connection (KIP-219).

``stats`` holds the windowed rates, ``entity`` the precedence, ``manager`` the sensors and throttle times,
``client_quotas`` the broker-wide object the request path and the dynamic config manager talk to.
"""
