"""Client-side security: TLS contexts from Kafka's ssl.* settings, SASL (PLAIN, SCRAM) and JAAS text."""

from .client_security import SECURITY_DEFAULTS, ClientSecurity, security_kwargs_from_properties

__all__ = ["ClientSecurity", "SECURITY_DEFAULTS", "security_kwargs_from_properties"]
