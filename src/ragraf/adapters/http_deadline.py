"""A deadline on reading each HTTP request: a connection that sends nothing, or one byte a second
(slowloris), is closed once READ_TIMEOUT_S pass without a whole request, counted from connecting or
from the previous response; a request already read is never cut, however long it runs.

uvicorn's own keep-alive timer is cancelled by any byte that arrives and is not armed at all before
the first request, so on its own it closes neither kind.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ragraf.errors import ConfigError

READ_TIMEOUT_S = 10.0
READ_TIMEOUT_ENV = "RAGRAF_HTTP_READ_TIMEOUT_S"


class DeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's head and body."""

    read_timeout_s = READ_TIMEOUT_S
    _read_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_read_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_read_deadline()  # the next request on this connection gets its own deadline

    def connection_lost(self, exc: Exception | None) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None
        super().connection_lost(exc)

    def _arm_read_deadline(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
        self._read_deadline = self.loop.call_later(self.read_timeout_s, self._read_deadline_passed)

    def _read_deadline_passed(self) -> None:
        self._read_deadline = None
        # IDLE: the request's head has not all come; SEND_BODY: its body has not.
        if not self.transport.is_closing() and self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            self.transport.close()


def deadline_protocol(env: Mapping[str, str]) -> type[DeadlineProtocol]:
    """The protocol class with the deadline RAGRAF_HTTP_READ_TIMEOUT_S sets (seconds, default 10)."""
    raw = env.get(READ_TIMEOUT_ENV, "").strip()
    if not raw:
        return DeadlineProtocol
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 < seconds <= 3600):
        raise ConfigError(
            f"{READ_TIMEOUT_ENV}={raw!r} is not a number of seconds between 0 and 3600",
            suggest=f"unset it (default {READ_TIMEOUT_S:g}) or give e.g. {READ_TIMEOUT_ENV}=30",
        )
    return type("DeadlineProtocol", (DeadlineProtocol,), {"read_timeout_s": seconds})
