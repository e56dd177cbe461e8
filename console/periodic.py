"""A background job run every ``interval_s`` while the console serves (metrics, metadata watch, group lag)."""

from __future__ import annotations

import asyncio


class Periodic:
    interval_s: float

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.error: str | None = None  # the last round's failure, shown by the page that needs the data
        self._task: asyncio.Task | None = None

    async def run_once(self) -> None:
        raise NotImplementedError

    def wanted(self) -> bool:
        """Whether this round should run (a job whose data nobody looked at lately can skip it)."""
        return True

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _loop(self) -> None:
        while True:
            try:
                if self.wanted():
                    await self.run_once()
                    self.error = None
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a cluster that does not answer now may answer next time
                self.error = f"{type(exc).__name__}: {exc}"
            await asyncio.sleep(self.interval_s)
