"""Arrival beacons: what each MPI rank is doing, readable by any other rank at any time, on
any node, without the rank's help.

When a collective times out, the waiting ranks must say which members never reached it.
The members that did not arrive cannot answer an MPI message (they are not in MPI, or are
blocked elsewhere), so each rank runs a tiny TCP server on a daemon thread that answers
every connection with the rank's current state: a fixed array of int64 words that the rank
updates with plain stores (no system call on the hot path). The thread sleeps in
``accept()``, so it costs no CPU; it answers even while the rank computes, since Python
switches threads every few milliseconds.

Addresses travel once, at start-up, in an ``Allgather`` of fixed-size int64 rows. A rank on
the same host and network namespace is read over loopback; a rank elsewhere over the IPv4
addresses of its interfaces (what ``mpirun`` across hosts or network namespaces uses).

State words: ``[running=0 | waiting=1, kind, group fingerprint, call number, deadline in ms
since the epoch, pid, 0, 0]``, then ``SLOTS`` pairs ``(group fingerprint, calls entered)``:
how many collectives the rank has entered on each group it uses.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import threading
from typing import Any

import numpy as np

from .header import stable_hash

SLOTS = 64
WORDS = 8 + 2 * SLOTS
_MAX_ADDRESSES = 8
_ROW = 3 + _MAX_ADDRESSES  # host id, port, address count, addresses
_READ_TIMEOUT = 2.0


def _host_id() -> int:
    """Equal for two processes exactly when they share a kernel and a network namespace."""
    parts = []
    for path in ("/proc/sys/kernel/random/boot_id",):
        with contextlib.suppress(OSError):
            parts.append(open(path, "rb").read())
    with contextlib.suppress(OSError):
        parts.append(str(os.stat("/proc/self/ns/net").st_ino).encode())
    parts.append(socket.gethostname().encode())
    return stable_hash(b"|".join(parts))


def _ipv4_addresses() -> list[int]:
    """This host's non-loopback IPv4 addresses (Linux: SIOCGIFADDR per interface)."""
    try:
        import fcntl
    except ImportError:
        return []
    found = []
    for _, name in socket.if_nameindex():
        with contextlib.suppress(OSError), socket.socket(socket.AF_INET,
                                                         socket.SOCK_DGRAM) as probe:
            packed = fcntl.ioctl(probe.fileno(), 0x8915,  # SIOCGIFADDR
                                 struct.pack("256s", name[:15].encode()))
            address = struct.unpack("!I", packed[20:24])[0]
            if address >> 24 != 127 and address not in found:
                found.append(address)
    return found[:_MAX_ADDRESSES]


class Beacons:
    """This rank's published state and the means to read every other rank's."""

    def __init__(self, comm: Any):
        self.rank = comm.Get_rank()
        self.state = np.zeros(WORDS, np.int64)
        self.state[5] = os.getpid()
        self._slots: dict[int, int] = {}
        self._server = socket.create_server(("", 0), backlog=64)
        row = np.zeros(_ROW, np.int64)
        addresses = _ipv4_addresses()
        row[:3] = (_host_id(), self._server.getsockname()[1], len(addresses))
        row[3:3 + len(addresses)] = addresses
        self._table = np.empty((comm.Get_size(), _ROW), np.int64)
        comm.Allgather(row, self._table)
        self._host = int(row[0])
        thread = threading.Thread(target=self._serve, name="xla-spmd-beacon", daemon=True)
        thread.start()

    def _serve(self) -> None:
        server = self._server
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return  # closed
            with contextlib.suppress(OSError), connection:
                connection.sendall(self.state.tobytes())

    # -- publishing (plain stores) ----------------------------------------------------------

    def entered(self, fingerprint: int, sequence: int) -> None:
        """This rank entered call ``sequence`` on the group with ``fingerprint``."""
        slot = self._slots.get(fingerprint)
        if slot is None:
            if len(self._slots) == SLOTS:
                return  # a program with more groups than slots: those read as unknown
            slot = self._slots[fingerprint] = len(self._slots)
            self.state[8 + 2 * slot] = fingerprint
        self.state[9 + 2 * slot] = sequence + 1

    def waiting(self, kind: int, fingerprint: int, sequence: int, deadline: float) -> None:
        state = self.state  # word by word: cheaper than assigning a tuple to a slice
        state[1] = kind
        state[2] = fingerprint
        state[3] = sequence
        state[4] = int(min(deadline, 1e15) * 1000)
        state[0] = 1

    def running(self) -> None:
        self.state[0] = 0

    # -- reading ----------------------------------------------------------------------------

    def read(self, rank: int) -> np.ndarray | None:
        """Rank ``rank``'s state words, or None when it cannot be reached."""
        if rank == self.rank:
            return self.state.copy()
        host, port, count = (int(v) for v in self._table[rank, :3])
        if host == self._host:
            candidates = ["127.0.0.1"]
        else:
            candidates = [socket.inet_ntoa(struct.pack("!I", int(a)))
                          for a in self._table[rank, 3:3 + count]]
        for address in candidates:
            with contextlib.suppress(OSError):
                with socket.create_connection((address, port), timeout=_READ_TIMEOUT) as link:
                    link.settimeout(_READ_TIMEOUT)
                    data = bytearray()
                    while len(data) < WORDS * 8:
                        chunk = link.recv(WORDS * 8 - len(data))
                        if not chunk:
                            break
                        data += chunk
                if len(data) == WORDS * 8:
                    return np.frombuffer(bytes(data), np.int64)
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._server.close()


def calls_entered(state: np.ndarray, fingerprint: int) -> int | None:
    """How many collectives the rank whose ``state`` this is entered on the group, or None
    when its table is full without that group."""
    for group, count in state[8:].reshape(SLOTS, 2):
        if group == fingerprint:
            return int(count)
        if group == 0:
            return 0  # slots fill in order: an empty one ends the table
    return None


def deadline_of(state: np.ndarray) -> float:
    """When a waiting rank will time out (seconds since the epoch)."""
    return float(state[4]) / 1000.0
