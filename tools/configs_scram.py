"""odradek-configs for users' SCRAM credentials, as Kafka 2.8's ConfigCommand:

* ``--zookeeper <connect> --alter --add-config 'SCRAM-SHA-512=[password=...]' --entity-type users --entity-name
  admin``: Kafka's bootstrap step, before any broker runs. The credential is made here (random salt, stored and
  server keys) and written to ``/config/users/<user>`` with a ``/config/changes`` notification, exactly as
  Kafka's AdminZkClient does; ``--describe`` prints the stored configs. Only users are kept this way here:
  topics and brokers are administered through brokers (--bootstrap-server).
* ``--bootstrap-server ... --entity-type users``: KIP-554's DescribeUserScramCredentials /
  AlterUserScramCredentials through the admin client (the password is salted here, never sent).

``SCRAM-SHA-256=[iterations=8192,password=alice-secret]`` sets a credential (4096 iterations by default),
``--delete-config SCRAM-SHA-256`` removes one.
"""

from __future__ import annotations

import argparse
import re
from typing import Any, Callable

from ..controller.zk_client import KafkaZkClient
from ..protocol.errors import ResourceNotFoundError  # type: ignore[attr-defined]
from ..controller.zk_data import desanitize_entity_name, sanitize_entity_name
from ..clients.admin.scram import UserScramCredentialDeletion, UserScramCredentialUpsertion
from ..clients.security.scram import DEFAULT_ITERATIONS, MECHANISMS, make_credential
from .common import InvalidConfiguration, UsageError

ZK_SUPPORTED_TYPES = ("users",)
# User configs Kafka 2.8 keeps next to the credentials (DynamicConfig.User): quotas, stored as given.
USER_QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.S)


class InvalidCredential(ValueError):
    """Kafka's IllegalArgumentException of a bad credential property: one line on stderr, exit 1."""


def _iterations_and_password(mechanism: str, value: str, allow_minus_one: bool) -> tuple[int, str]:
    m = _CREDENTIAL.fullmatch(value)
    if m is None:
        raise InvalidCredential(f"Invalid credential property {mechanism}={value}")
    text = m.group(1)
    iterations = DEFAULT_ITERATIONS if not text or (allow_minus_one and text == "-1") else int(text)
    minimum = MECHANISMS[mechanism].min_iterations
    if iterations < minimum:
        raise InvalidCredential(f"Iterations {iterations} is less than the minimum {minimum} required for {mechanism}")
    return iterations, m.group(2)


def entity_label(name: str) -> str:
    """Kafka's ConfigCommand.Entity.toString for users."""
    return "default user-principal" if name == "<default>" else f"user-principal '{name}'"


# -- --zookeeper ---------------------------------------------------------------------------------------

def check_zookeeper_options(opts: argparse.Namespace, types: list[str]) -> None:
    """ConfigCommandOptions.checkArgs for --zookeeper, restricted to what this cluster keeps there."""
    if opts.bootstrap_server:
        raise UsageError("Only one of --bootstrap-server or --zookeeper must be specified")
    if opts.all:
        raise UsageError("--bootstrap-server must be specified for --all")
    for entity_type in types:
        if entity_type not in ZK_SUPPORTED_TYPES:
            raise UsageError(f"Invalid entity type {entity_type}, the entity type must be one of "
                             f"{','.join(ZK_SUPPORTED_TYPES)} with the --zookeeper argument (this cluster keeps "
                             "topic and broker configs through its brokers: use --bootstrap-server)")


def run_with_zookeeper(opts: argparse.Namespace, out: Callable[[str], None] = print) -> None:
    out("Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.")
    out("Use --bootstrap-server instead to specify a broker to connect to.")
    zk = KafkaZkClient(opts.zookeeper, session_timeout_ms=30000, connection_timeout_ms=30000)
    zk.start()
    try:
        (_alter_with_zk if opts.alter else _describe_with_zk)(zk, opts, out)
    finally:
        zk.close()


def _alter_with_zk(zk: KafkaZkClient, opts: argparse.Namespace, out: Callable[[str], None]) -> None:
    name = opts.name if opts.name else "<default>"
    sanitized = sanitize_entity_name(name) if opts.name else name
    to_add = dict(opts.to_add)
    for key in list(to_add) + list(opts.to_delete):
        if key not in MECHANISMS and key not in USER_QUOTA_KEYS:
            raise InvalidCredential(f"Unknown Dynamic Configuration '{key}'.")
    for mechanism in MECHANISMS:
        if mechanism in to_add:
            iterations, password = _iterations_and_password(mechanism, to_add[mechanism], allow_minus_one=False)
            to_add[mechanism] = make_credential(MECHANISMS[mechanism], password, iterations).to_text()
    configs = zk.get_entity_config("users", sanitized)
    missing = [key for key in opts.to_delete if key not in configs]
    if missing:
        raise InvalidConfiguration(f"Invalid config(s): {','.join(missing)}")
    configs.update(to_add)
    for key in opts.to_delete:
        configs.pop(key, None)
    zk.create_top_level_paths()
    zk.set_entity_config("users", sanitized, configs)
    out(f"Completed updating config for entity: {entity_label(name)}.")


def _describe_with_zk(zk: KafkaZkClient, opts: argparse.Namespace, out: Callable[[str], None]) -> None:
    if opts.name is None:
        names = [desanitize_entity_name(n) for n in zk.get_children("/config/users")]
    else:
        names = [opts.name or "<default>"]
    for name in names:
        sanitized = name if name == "<default>" else sanitize_entity_name(name)
        configs = zk.get_entity_config("users", sanitized)
        if configs or opts.name is not None:  # describing all users skips those with nothing of their own
            out(f"Configs for {entity_label(name)} are {','.join(f'{k}={v}' for k, v in configs.items())}")


# -- --bootstrap-server (KIP-554) -----------------------------------------------------------------------

def is_credential_command(opts: argparse.Namespace) -> bool:
    """An --alter of users (alone) naming a SCRAM mechanism: KIP-554's path, not the quotas'."""
    return opts.alter and opts.entity_types == ["users"] and any(
        key in MECHANISMS for key in (*opts.to_add, *opts.to_delete))


async def alter_user_credentials(admin: Any, opts: argparse.Namespace, out: Callable[[str], None]) -> None:
    scram_add = {k: v for k, v in opts.to_add.items() if k in MECHANISMS}
    unknown_add = [k for k in opts.to_add if k not in MECHANISMS and k not in USER_QUOTA_KEYS]
    unknown_delete = [k for k in opts.to_delete if k not in MECHANISMS and k not in USER_QUOTA_KEYS]
    if unknown_add:
        raise InvalidCredential("Only quota and SCRAM credential configs can be added for 'users' using "
                                f"--bootstrap-server. Unexpected config names: {unknown_add}")
    if unknown_delete:
        raise InvalidCredential("Only quota and SCRAM credential configs can be deleted for 'users' using "
                                f"--bootstrap-server. Unexpected config names: {unknown_delete}")
    if not opts.name:
        raise InvalidCredential("The use of --entity-default or --user-defaults is not allowed with User SCRAM "
                                "Credentials using --bootstrap-server.")
    if len(scram_add) != len(opts.to_add) or any(k not in MECHANISMS for k in opts.to_delete):
        raise InvalidCredential("Cannot alter both quota and SCRAM credential configs simultaneously for 'users' "
                                "using --bootstrap-server.")
    alterations: list[Any] = [UserScramCredentialDeletion(opts.name, m) for m in opts.to_delete]
    for mechanism, value in scram_add.items():
        iterations, password = _iterations_and_password(mechanism, value, allow_minus_one=True)
        alterations.append(UserScramCredentialUpsertion(opts.name, mechanism, password, iterations))
    for error in (await admin.alter_user_scram_credentials(alterations)).values():
        if error is not None:
            raise error
    out(f"Completed updating config for user {opts.name}.")


async def describe_user_credentials(admin: Any, opts: argparse.Namespace, out: Callable[[str], None]) -> None:
    if opts.name == "" or opts.entity_types != ["users"]:
        return  # Kafka describes SCRAM credentials of users only, and not for --entity-default
    described = await admin.describe_user_scram_credentials(None if opts.name is None else [opts.name])
    for user, description in described.items():
        if isinstance(description.error, ResourceNotFoundError):
            continue  # Kafka's result.users() leaves out users without credentials
        if description.error is not None:
            out(f"Error retrieving SCRAM credential configs for user-principal '{user}': "
                f"{type(description.error).__name__}: {description.error.detail}")
            continue
        text = ", ".join(f"{info.mechanism}=iterations={info.iterations}" for info in description.credential_infos)
        out(f"SCRAM credential configs for user-principal '{user}' are {text}")
