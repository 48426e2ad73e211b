"""The uvicorn server of the service, with a deadline on reading request headers and bodies.

uvicorn times out idle keep-alive connections but not a client that sends its headers a byte at a
time, so a few such clients would hold every connection open forever. The protocol below closes a
connection whose request headers are not complete within serve.header_timeout_s of its start (or
of the previous response); the app bounds reading the body with serve.body_timeout_s.
"""
from __future__ import annotations

import asyncio
import logging

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)


class HeaderDeadlineProtocol(H11Protocol):
    header_timeout_s: float = 10.0  # set per server by protocol_for()

    def _arm(self) -> None:
        self._disarm()
        self._header_deadline: asyncio.TimerHandle | None = self.loop.call_later(self.header_timeout_s, self._expire)

    def _disarm(self) -> None:
        task = getattr(self, "_header_deadline", None)
        if task is not None:
            task.cancel()
            self._header_deadline = None

    def _expire(self) -> None:
        self._header_deadline = None
        # Their state leaves IDLE once h11 has parsed a complete request head.
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            log.info("closing a connection from %s: request headers not complete after %g s", self.client,
                     self.header_timeout_s)
            self.transport.close()

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this keep-alive connection gets the same deadline

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)


def protocol_for(header_timeout_s: float) -> type[HeaderDeadlineProtocol]:
    return type("HeaderDeadlineProtocol", (HeaderDeadlineProtocol,), {"header_timeout_s": header_timeout_s})


def server_config(app, cfg, host: str, port: int, **kwargs) -> uvicorn.Config:
    """uvicorn settings of `promem serve` (also used by the tests' live server)."""
    return uvicorn.Config(app, host=host, port=port, http=protocol_for(cfg.serve.header_timeout_s),
                          timeout_keep_alive=int(max(1, cfg.serve.header_timeout_s)), **kwargs)
