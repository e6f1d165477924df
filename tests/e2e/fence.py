"""A network namespace with only a loopback interface, for runtimes under test.

Configuration alone cannot keep a runtime on loopback (Codex looks up outside
hosts even when pointed at a local provider with every check turned off), so
each runtime and its stand-in API run inside a namespace that has no other
interface: any address but 127.0.0.1 is unreachable there, by construction.

A holder process creates the namespace (``unshare --net``), brings ``lo`` up,
checks that it is the only interface, and waits on its standard input; every
command is then started inside it with ``nsenter --net``. Closing the holder's
input ends it, and the namespace goes with the last process in it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Self

# Run by the holder, inside the new namespace.
_HOLDER = r"""
import fcntl, socket, struct, sys
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    request = struct.pack("16sH", b"lo", 0)
    flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, request))[1]
    fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))
names = sorted(name for _, name in socket.if_nameindex())
print("ready " + ",".join(names), flush=True)
sys.stdin.read()
"""


class FenceError(RuntimeError):
    """The namespace could not be made: nothing may run unfenced."""


class Fence:
    """A loopback-only network namespace; ``wrap`` a command to run it inside."""

    def __init__(self) -> None:
        for tool in ("unshare", "nsenter"):
            if shutil.which(tool) is None:
                raise FenceError(f"{tool} (util-linux) is not installed: the runtimes cannot be fenced")
        self._holder = subprocess.Popen(
            ["unshare", "--net", "--", sys.executable, "-c", _HOLDER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self._holder.stdout.readline() if self._holder.stdout else ""
        if not line.startswith("ready "):
            error = self._holder.stderr.read() if self._holder.stderr else ""
            self.close()
            raise FenceError(
                "could not create a loopback-only network namespace (unshare --net needs root or user "
                f"namespaces): {error.strip() or 'the holder exited'}"
            )
        interfaces = line.split(None, 1)[1].strip().split(",")
        if interfaces != ["lo"]:
            self.close()
            raise FenceError(f"the namespace has interfaces besides lo: {interfaces}")
        self.namespace = Path(f"/proc/{self._holder.pid}/ns/net")

    def wrap(self, command: list[str]) -> list[str]:
        """``command`` run inside the namespace (nsenter execs it: same pid, same group)."""
        return ["nsenter", f"--net={self.namespace}", "--", *command]

    def close(self) -> None:
        if self._holder.poll() is None:
            if self._holder.stdin:
                self._holder.stdin.close()
            try:
                self._holder.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._holder.kill()
                self._holder.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
