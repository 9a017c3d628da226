"""Two "hosts" on one machine for `mpirun --hostfile`: Linux network namespaces joined by a veth
pair, each with its own address, host name and temporary folder.

    with two_hosts(folder) as hosts:
        subprocess.run(hosts.mpirun(["mpirun", "-n", "8", ...]))

* Host A is namespace ``<prefix>a`` at 10.200.0.1/24, host B ``<prefix>b`` at 10.200.0.2/24;
  the addresses exist only inside these two namespaces, so they collide with nothing.
* ``mpirun`` runs on host A. It starts its daemon on host B through a launch agent that
  stands in for ssh: ``agent.sh HOST COMMAND...`` runs COMMAND in HOST's namespace
  (``ip netns exec``). Real hosts need nothing of the sort; the agent also gives each host
  its own host name (``unshare --uts``) and ``TMPDIR``, which real hosts have anyway and
  which Open MPI uses to tell nodes (and their session folders) apart.
* Every hop is TCP over the veth pair (``--mca pml ob1 --mca btl tcp,self`` and
  ``btl_tcp_if_include``), as between machines.

Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN); `two_hosts` raises `Unavailable` with the reason
where namespaces cannot be made.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SUBNET = "10.200.0.0/24"
ADDRESSES = ("10.200.0.1", "10.200.0.2")

AGENT = """#!/bin/sh
# ssh stand-in for mpirun: agent.sh HOST COMMAND... runs COMMAND on HOST, i.e. in HOST's
# network namespace, with HOST's own host name and temporary folder.
host=$1; shift
echo "$host" >> {log}
case "$host" in
{cases}
  *) echo "agent.sh: unknown host $host" >&2; exit 255 ;;
esac
mkdir -p "{folder}/tmp-$ns"
exec ip netns exec "$ns" unshare --uts /bin/sh -c \\
    "hostname $ns; TMPDIR={folder}/tmp-$ns; export TMPDIR; $*"
"""


class Unavailable(Exception):
    """Network namespaces cannot be made here (not root, no `ip`, or not permitted)."""


@dataclass(frozen=True)
class TwoHosts:
    namespaces: tuple[str, str]
    hostfile: Path
    agent: Path
    agent_log: Path
    folder: Path

    def mpirun(self, command: list[str]) -> list[str]:
        """`command` (starting with the mpirun executable) run on host A, across both hosts
        over TCP only."""
        mpirun, *rest = command
        options = ["--hostfile", str(self.hostfile),
                   "--prtemca", "plm_ssh_agent", str(self.agent),
                   "--prtemca", "oob_tcp_if_include", SUBNET,
                   "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
                   "--mca", "btl_tcp_if_include", SUBNET]
        host = self.namespaces[0]
        (self.folder / f"tmp-{host}").mkdir(exist_ok=True)
        shell = f'hostname "$0"; TMPDIR={self.folder}/tmp-"$0"; export TMPDIR; exec "$@"'
        return ["ip", "netns", "exec", host, "unshare", "--uts", "sh", "-c", shell, host,
                mpirun, *options, *rest]


def _ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise Unavailable(f"`ip {' '.join(args)}` failed: {result.stderr.strip()}")


@contextlib.contextmanager
def two_hosts(folder: Path, slots: int = 4) -> Iterator[TwoHosts]:
    """Make the two namespaces for the duration of the block; remove them after."""
    if os.geteuid() != 0:
        raise Unavailable("making network namespaces needs root")
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            raise Unavailable(f"needs the `{tool}` command")
    prefix = f"xs{os.getpid()}"
    spaces = (f"{prefix}a", f"{prefix}b")
    links = (f"{prefix}va", f"{prefix}vb")
    made: list[str] = []
    try:
        for space in spaces:
            _ip("netns", "add", space)
            made.append(space)
        _ip("link", "add", links[0], "type", "veth", "peer", "name", links[1])
        for space, link, address in zip(spaces, links, ADDRESSES):
            _ip("link", "set", link, "netns", space)
            _ip("-n", space, "addr", "add", f"{address}/24", "dev", link)
            _ip("-n", space, "link", "set", link, "up")
            _ip("-n", space, "link", "set", "lo", "up")
        hostfile = folder / "hostfile"
        hostfile.write_text("".join(f"{a} slots={slots}\n" for a in ADDRESSES))
        log = folder / "agent.log"
        agent = folder / "agent.sh"
        cases = "\n".join(f"  {a}) ns={s} ;;" for a, s in zip(ADDRESSES, spaces))
        agent.write_text(AGENT.format(log=log, cases=cases, folder=folder))
        agent.chmod(0o755)
        yield TwoHosts(spaces, hostfile, agent, log, folder)
    finally:
        for space in made:  # deleting a namespace deletes its end of the veth pair, and so both
            subprocess.run(["ip", "netns", "del", space], capture_output=True)
