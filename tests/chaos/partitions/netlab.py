"""A network lab on this machine: ZooKeeper and each broker in a network namespace of its own, joined by
veth pairs to a bridge, so that a test can cut chosen links between them and touch nothing else.

One lab (``<tag>`` = the owner's pid, its start time and a counter, so a later run knows a dead run's
leftovers):

    odradek-<tag>-hub      bridge ``br0``; one veth end per node (``v-<node>``) and ``gw``
    odradek-<tag>-<node>   ``eth0`` with 10.231.N.x/24 (zk .2, b0 .10, b1 .11, ...) and ``lo``
    root namespace         ``odl<pid>k<n>`` with 10.231.N.1/24: the test process, node "client"

A cut is a policy-routing rule in the receiving namespace, ``from <sender> iif eth0 blackhole`` at
preference 10 (ahead of the local table, moved from 0 to 1000): the sender's packets vanish silently, as
with iptables DROP on INPUT, and a rule on one side only is a one-way cut. The root namespace gets no
rules: packets *to* the client are dropped on the sending node (an output rule ``to <client> blackhole``).
Needs root and iproute2 only (no iptables, no tc: this kernel has neither netem nor classifiers).
Deleting a lab's namespaces removes all it made; the root-side veth goes with its peer in the hub.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Iterable, Sequence

CLIENT = "client"
PREFIX = "odradek-"
SUBNET = "10.231"  # 10.231.N.0/24, N chosen free at creation
RULE_PREF = 10
LOCAL_PREF = 1000
LOCK_PATH = Path("/run/lock/odradek-netlab.lock")
_NAME = re.compile(rf"^{PREFIX}(\d+)-(\d+)-(\d+)-([a-z0-9]+)$")
_counter = itertools.count()


class NetLabError(RuntimeError):
    pass


def ip(*args: str, check: bool = True) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise NetLabError(f"ip {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def available() -> str | None:
    """None when labs can be made here, else why not. Only a non-root user is a reason to skip the tests: as
    root (CI), a lab that cannot be made is an error worth seeing."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    return None


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[19])


def _kill_namespace_processes(namespace: str) -> list[int]:
    """SIGKILL what still runs in one of our namespaces (a broker or ZooKeeper of a run that died)."""
    pids = [int(p) for p in ip("netns", "pids", namespace, check=False).split()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


def _delete_namespace(namespace: str) -> None:
    _kill_namespace_processes(namespace)
    ip("netns", "del", namespace, check=False)


def sweep_leftovers() -> list[str]:
    """Delete the namespaces (and kill the processes in them) of labs whose owner process is gone: a run that
    was killed before its clean-up. Labs of live owners, other test runs included, are left alone."""
    removed = []
    for line in ip("netns", "list").splitlines():
        name = line.split()[0] if line.strip() else ""
        match = _NAME.match(name)
        if match is None:
            continue
        pid, started = int(match.group(1)), int(match.group(2))
        if _start_time(pid) == started:
            continue
        _delete_namespace(name)
        removed.append(name)
    return removed


@contextlib.contextmanager
def _machine_lock():
    """One lab is set up at a time on this machine, so two runs never pick the same subnet."""
    LOCK_PATH.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK_PATH, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class NetLab:
    """Namespaces for ``nodes`` (e.g. ["zk", "b0", "b1", "b2"]) plus the test process as node "client"."""

    def __init__(self, nodes: Sequence[str]) -> None:
        if CLIENT in nodes or len(set(nodes)) != len(nodes):
            raise ValueError(f"node names must be unique and not {CLIENT!r}: {nodes}")
        self.nodes = list(nodes)
        pid = os.getpid()
        self.tag = f"{pid}-{_start_time(pid)}-{next(_counter)}"
        self.root_link = f"odl{pid:x}k{self.tag.rsplit('-', 1)[1]}"
        self.subnet = ""
        self.drops: set[tuple[str, str]] = set()  # (sender, receiver) pairs whose packets vanish
        self.created = False

    # -- names and addresses ------------------------------------------------------------------------------------
    def namespace(self, node: str) -> str:
        return f"{PREFIX}{self.tag}-{node}"

    def address(self, node: str) -> str:
        if node == CLIENT:
            return f"{self.subnet}.1"
        if node == "zk":
            return f"{self.subnet}.2"
        return f"{self.subnet}.{10 + self.nodes.index(node)}"

    def prefix(self, node: str) -> list[str]:
        """Run a command inside ``node``'s namespace (``ip netns exec`` execs it: the pid stays the same)."""
        return ["ip", "netns", "exec", self.namespace(node)]

    # -- set-up and tear-down -----------------------------------------------------------------------------------
    def create(self) -> "NetLab":
        sweep_leftovers()
        hub = self.namespace("hub")
        try:
            with _machine_lock():
                self.subnet = self._free_subnet()
                self.created = True
                ip("netns", "add", hub)
                ip("-n", hub, "link", "set", "lo", "up")
                ip("-n", hub, "link", "add", "br0", "type", "bridge")
                ip("-n", hub, "link", "set", "br0", "up")
                ip("link", "add", self.root_link, "type", "veth", "peer", "name", "gw", "netns", hub)
                ip("addr", "add", f"{self.address(CLIENT)}/24", "dev", self.root_link)
                ip("link", "set", self.root_link, "up")
                ip("-n", hub, "link", "set", "gw", "master", "br0", "up")
            for node in self.nodes:
                self._add_node(hub, node)
        except BaseException:
            self.destroy()
            raise
        return self

    def _free_subnet(self) -> str:
        used = set(re.findall(r"\b10\.231\.(\d+)\.", ip("-4", "-o", "addr", "show") + ip("-4", "route", "show")))
        start = os.getpid() % 250
        for n in range(250):
            third = str((start + n) % 250)
            if third not in used:
                return f"{SUBNET}.{third}"
        raise NetLabError(f"no free /24 left in {SUBNET}.0.0/16")

    def _add_node(self, hub: str, node: str) -> None:
        ns = self.namespace(node)
        ip("netns", "add", ns)
        ip("-n", hub, "link", "add", f"v-{node}", "type", "veth", "peer", "name", "eth0", "netns", ns)
        ip("-n", hub, "link", "set", f"v-{node}", "master", "br0", "up")
        ip("-n", ns, "addr", "add", f"{self.address(node)}/24", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        ip("-n", ns, "link", "set", "lo", "up")
        # our drop rules must come before the local table, which accepts anything addressed to us
        ip("-n", ns, "rule", "add", "pref", str(LOCAL_PREF), "lookup", "local")
        ip("-n", ns, "rule", "del", "pref", "0")

    def destroy(self) -> None:
        """Delete every namespace of the lab (killing whatever still runs in them). Safe to call twice."""
        if not self.created:
            return
        existing = {line.split()[0] for line in ip("netns", "list", check=False).splitlines() if line.strip()}
        for node in self.nodes + ["hub"]:
            if self.namespace(node) in existing:
                _delete_namespace(self.namespace(node))
        ip("link", "del", self.root_link, check=False)  # goes with the hub anyway, but asynchronously
        self.drops.clear()
        self.created = False

    def __enter__(self) -> "NetLab":
        return self.create()

    def __exit__(self, *exc) -> None:
        self.destroy()

    # -- faults -------------------------------------------------------------------------------------------------
    def _rule(self, action: str, sender: str, receiver: str) -> None:
        if receiver == CLIENT:  # nothing is done in the root namespace: drop on the way out of the sender
            ip("-n", self.namespace(sender), "rule", action, "pref", str(RULE_PREF), "to",
               f"{self.address(CLIENT)}/32", "blackhole")
        else:
            ip("-n", self.namespace(receiver), "rule", action, "pref", str(RULE_PREF), "from",
               f"{self.address(sender)}/32", "iif", "eth0", "blackhole")

    def drop(self, sender: str, receiver: str) -> None:
        """From now on, packets from ``sender`` to ``receiver`` vanish (one direction only)."""
        if sender == receiver or (sender, receiver) in self.drops:
            return
        if CLIENT not in (sender, receiver) and not {sender, receiver} <= set(self.nodes):
            raise ValueError(f"unknown node in {sender!r} -> {receiver!r}")
        self._rule("add", sender, receiver)
        self.drops.add((sender, receiver))

    def restore(self, sender: str, receiver: str) -> None:
        """Undo ``drop(sender, receiver)``."""
        if (sender, receiver) in self.drops:
            self._rule("del", sender, receiver)
            self.drops.discard((sender, receiver))

    def cut(self, side_a: Iterable[str], side_b: Iterable[str], one_way: bool = False) -> None:
        """No packet from side A reaches side B (and none from B reaches A, unless ``one_way``)."""
        side_b = list(side_b)
        for a in side_a:
            for b in side_b:
                self.drop(a, b)
                if not one_way:
                    self.drop(b, a)

    def isolate(self, node: str) -> None:
        """Cut ``node`` from every other node and from the client."""
        self.cut([node], [n for n in self.nodes + [CLIENT] if n != node])

    def heal(self) -> None:
        for sender, receiver in sorted(self.drops):
            self._rule("del", sender, receiver)
        self.drops.clear()

    def reachable(self, sender: str, receiver: str) -> bool:
        return (sender, receiver) not in self.drops

