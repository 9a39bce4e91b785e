"""Reaching a Dask scheduler before a sweep is sent to it."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from fredfab.sim.cli import UserError

#: Seconds to wait for the scheduler to accept a connection.
CONNECT_TIMEOUT = 5.0


def check_scheduler(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Raise UserError unless a TCP connection to ``address`` (tcp://host:port or host:port)
    opens within ``timeout`` seconds. Other transports (tls://, ucx://, ...) are left to Dask."""
    url = urlsplit(address if "://" in address else f"tcp://{address}")
    if url.scheme != "tcp":
        return
    try:
        host, port = url.hostname, url.port
    except ValueError:
        host, port = None, None
    if not host or port is None:
        raise UserError(f"--scheduler {address}: expected tcp://HOST:PORT, e.g. tcp://host:8786")
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        raise UserError(f"cannot reach the scheduler at {address}: {reason}") from None
