"""``python -m odradek.broker.log.cleaner.worker_process <fd> <broker pid>``: a cleaner worker process.

It serves worker.py's loop on the socket inherited as ``fd``. It dies with the broker: Linux kills it when
the broker's thread that started it goes (PR_SET_PDEATHSIG), and an end of file on the socket ends it too,
so it never outlives a SIGKILLed broker. Its own module, so that ``-m`` does not run a module the
package has already imported.
"""

from __future__ import annotations

import os
import signal
import sys
from multiprocessing.connection import Connection

from .worker import serve

WORKER_NICENESS = 5


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the broker thread that started it ends."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(argv: list[str]) -> None:
    """Serve on the inherited socket ``argv[0]`` for the broker process ``argv[1]``."""
    fd, parent = int(argv[0]), int(argv[1])
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the broker stops it (a terminal's Ctrl-C reaches both)
    os.nice(WORKER_NICENESS)  # background work: on a busy machine the broker's requests go first
    if os.getppid() != parent:
        return  # the broker died before the line above took effect
    serve(Connection(fd))


if __name__ == "__main__":
    main(sys.argv[1:])
