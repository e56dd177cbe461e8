"""The nemesis: network partitions and process faults on a LabCluster, chosen and aimed from a seed.

Network faults (rules of the NetLab; the client, i.e. the test process, keeps reaching every broker unless
said otherwise):

- isolate-leader      a partition's leader cut from ZooKeeper, the other brokers and the clients;
- leader-zk-only      the leader cut from ZooKeeper only (Jepsen 2013: it still serves clients and followers);
- isolate-follower    a follower cut from everything;
- majority-minority   the brokers split one against two, ZooKeeper on either side;
- one-way             the leader's packets to everyone else vanish, or everyone's packets to the leader do, or
                      only ZooKeeper's to the leader (its writes land, their answers do not).

Process faults: kill (SIGKILL, restarted after the hold), pause (SIGSTOP past the ZooKeeper session, then
SIGCONT), shutdown (SIGTERM: controlled shutdown, then restarted). Their target is the leader or the controller.

"The leader" is the leader of a partition drawn from ``aims``: the workload's partitions, and the
``__transaction_state`` partition of the transactional producer (its transaction coordinator).

Each fault is held for its time, healed, and followed by a wait until the cluster is whole again (every broker
registered, every partition with its full ISR); the FaultEvent records when each of these happened.
"""

from __future__ import annotations

import random
import signal
import time
from typing import Callable

from .history import FaultEvent, History
from .lab_cluster import SESSION_TIMEOUT_MS, LabCluster, node
from .netlab import CLIENT

NETWORK_FAULTS = ("isolate-leader", "leader-zk-only", "isolate-follower", "majority-minority", "one-way")
PROCESS_FAULTS = ("kill", "pause", "shutdown")
KINDS = NETWORK_FAULTS + PROCESS_FAULTS
RECOVERY_TIMEOUT_S = 90.0


def schedule(seed: int, count: int | None = None) -> list[str]:
    """Every kind once in an order drawn from ``seed`` (``count`` None), or ``count`` kinds drawn at random."""
    rng = random.Random(seed)
    if count is None:
        kinds = list(KINDS)
        rng.shuffle(kinds)
        return kinds
    return [rng.choice(KINDS) for _ in range(count)]


class Nemesis:
    def __init__(self, lc: LabCluster, history: History, aims: list[tuple[str, int]], rng: random.Random,
                 hold_s: float = 8.0, watched_topics: list[str] | None = None, random_hold: bool = False) -> None:
        self.lc, self.history, self.aims = lc, history, aims
        self.rng, self.hold_s, self.random_hold = rng, hold_s, random_hold
        self.watched_topics = watched_topics or sorted({t for t, _ in aims})

    def run(self, kind: str, wait_recovery: bool = True) -> FaultEvent:
        """Inject one fault of ``kind``, hold it, heal it, and (unless told not to) wait for recovery."""
        topic, partition = self.rng.choice(self.aims)
        leader, epoch, isr = self.lc.partition_state(topic, partition)
        if leader not in self.lc.broker_ids:  # nothing leads it: aim at a broker at random
            leader = self.rng.choice(self.lc.broker_ids)
        inject: Callable[[int], tuple[str, Callable[[], None], float]] = getattr(self, "_" + kind.replace("-", "_"))
        event = FaultEvent(kind, "", time.time())
        self.history.faults.append(event)
        detail, heal, hold = inject(leader)
        if self.random_hold:  # shorter than a session too: ISR flaps without a leader change
            hold = self.rng.uniform(1.0, 2 * hold)
        event.detail = f"{detail}, held {hold:.1f} s ({topic}-{partition} leader {leader} epoch {epoch} isr {isr})"
        time.sleep(hold)
        heal()
        event.healed = time.time()
        if wait_recovery:
            event.recovered = self.lc.wait_healthy(self.watched_topics, RECOVERY_TIMEOUT_S)
        return event

    # -- network ------------------------------------------------------------------------------------------------
    @property
    def lab(self):
        return self.lc.lab

    def _others(self, broker: int, with_zk: bool = True, with_client: bool = False) -> list[str]:
        others = [node(b) for b in self.lc.broker_ids if b != broker]
        return others + (["zk"] if with_zk else []) + ([CLIENT] if with_client else [])

    def _isolate_leader(self, leader: int):
        self.lab.isolate(node(leader))
        return f"broker {leader} cut from everyone", self.lab.heal, self.hold_s

    def _leader_zk_only(self, leader: int):
        self.lab.cut([node(leader)], ["zk"])
        return f"broker {leader} cut from ZooKeeper only", self.lab.heal, self.hold_s

    def _isolate_follower(self, leader: int):
        follower = self.rng.choice([b for b in self.lc.broker_ids if b != leader])
        self.lab.isolate(node(follower))
        return f"follower {follower} cut from everyone", self.lab.heal, self.hold_s

    def _majority_minority(self, leader: int):
        alone = leader if self.rng.random() < 0.5 else self.rng.choice(self.lc.broker_ids)
        zk_side = self.rng.choice(("majority", "minority"))
        minority = [node(alone)] + (["zk"] if zk_side == "minority" else [])
        majority = [node(b) for b in self.lc.broker_ids if b != alone] + (["zk"] if zk_side == "majority" else [])
        self.lab.cut(minority, majority)
        return (f"{minority} | {majority} (clients reach both)", self.lab.heal, self.hold_s)

    def _one_way(self, leader: int):
        others = self._others(leader, with_client=True)
        variant = self.rng.randrange(3)
        if variant == 0:
            self.lab.cut([node(leader)], others, one_way=True)
            detail = f"packets from broker {leader} to everyone vanish"
        elif variant == 1:
            self.lab.cut(others, [node(leader)], one_way=True)
            detail = f"packets to broker {leader} from everyone vanish"
        else:  # its ZooKeeper writes land, their answers do not: outcomes unknown
            self.lab.drop("zk", node(leader))
            detail = f"ZooKeeper's packets to broker {leader} vanish"
        return detail, self.lab.heal, self.hold_s

    # -- processes ----------------------------------------------------------------------------------------------
    def _target(self, leader: int) -> tuple[int, str]:
        controller = self.lc.controller()
        if self.rng.random() < 0.3 and controller in self.lc.broker_ids:
            return controller, "the controller"
        return leader, "the leader"

    def _kill(self, leader: int):
        target, what = self._target(leader)
        self.lc.cluster.kill_broker(target, signal.SIGKILL)
        return f"SIGKILL broker {target} ({what})", lambda: self.lc.cluster.start_broker(target, timeout=90), \
            self.hold_s / 2

    def _pause(self, leader: int):
        target, what = self._target(leader)
        self.lc.cluster.kill_broker(target, signal.SIGSTOP)
        return (f"SIGSTOP broker {target} ({what}) past its session",
                lambda: self.lc.cluster.kill_broker(target, signal.SIGCONT), SESSION_TIMEOUT_MS / 1000 + 2.5)

    def _shutdown(self, leader: int):
        target, what = self._target(leader)
        self.lc.cluster.stop_broker(target, timeout=30)
        return (f"SIGTERM broker {target} ({what}): controlled shutdown",
                lambda: self.lc.cluster.start_broker(target, timeout=90), 1.0)
