"""The partition soak, by hand (root needed): nemesis runs with random seeds and random faults, each on a
fresh lab cluster, until one finds an anomaly or the runs are done.

    python -m tests.chaos.partitions.soak --runs 10 --faults 20          # random seeds, printed first
    python -m tests.chaos.partitions.soak --seed 1234 --faults 20        # replay one
    python -m tests.chaos.partitions.soak --overlap                      # next fault before full recovery

Each run prints its seed and fault schedule, then the checker's report; a failing run also prints the broker
logs around the first losses and keeps its data directory (broker logs, segments) for a look. Exit 1 on the
first failing run.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from .lab_cluster import LabCluster
from .nemesis import schedule
from .netlab import available
from .scenario import Settings, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.partitions.soak", description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, help="replay this seed (one run); default: a random seed per run")
    parser.add_argument("--runs", type=int, default=1, help="how many runs (default 1)")
    parser.add_argument("--faults", type=int, default=20, help="faults per run, drawn at random (default 20)")
    parser.add_argument("--hold", type=float, default=8.0, help="seconds a network fault lasts (default 8)")
    parser.add_argument("--rate", type=float, default=40.0, help="sends/s of each idempotent producer (default 40)")
    parser.add_argument("--overlap", action="store_true", help="do not wait for a whole cluster between faults")
    parser.add_argument("--random-hold", action="store_true", help="faults last from 1 s to twice --hold")
    parser.add_argument("--data-dir", type=Path, help="where runs keep their files (default: a temporary dir)")
    opts = parser.parse_args(argv)
    why_not = available()
    if why_not:
        print(f"cannot run: {why_not}", file=sys.stderr)
        return 2
    seeds = [opts.seed] if opts.seed is not None else [random.SystemRandom().randrange(1 << 31)
                                                       for _ in range(opts.runs)]
    print(f"seeds: {seeds}", flush=True)
    base = opts.data_dir or Path(tempfile.mkdtemp(prefix="odradek-soak-"))
    for number, seed in enumerate(seeds, 1):
        settings = Settings(seed=seed, faults=schedule(seed, opts.faults), hold_s=opts.hold, rate=opts.rate,
                            overlap=opts.overlap, random_hold=opts.random_hold)
        print(f"\n=== run {number}/{len(seeds)}: seed {seed}: {', '.join(settings.faults)}", flush=True)
        data_dir = base / f"seed-{seed}"
        started = time.monotonic()
        with LabCluster(data_dir) as lc:
            outcome = run(lc, settings)
            failed = bool(outcome.problems or outcome.report.anomalies())
            print(outcome.failure_text(lc) if failed else outcome.schedule_text() + "\n" + outcome.report.render())
        print(f"=== seed {seed}: {'FAILED' if failed else 'ok'} in {time.monotonic() - started:.0f} s", flush=True)
        if failed:
            print(f"files kept in {data_dir}")
            return 1
        shutil.rmtree(data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
