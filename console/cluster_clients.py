"""What the console's background jobs need of it: the client and the admin client on the cluster. Named as a
protocol so that the jobs (lag history, topic list) need not import the Console that owns them."""

from __future__ import annotations

from typing import Protocol

from ..clients import AIOAdmin
from ..clients.simple_client import SimpleClient


class ClusterClients(Protocol):
    client: SimpleClient
    admin: AIOAdmin
