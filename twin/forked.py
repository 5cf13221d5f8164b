"""Work in a forked child process: its result or its exception handed back through a pipe.

The build renders the emitters that read the design alone in a child while the parent runs the twins
and the report (two cores, two processes; the child shares the compiled design copy-on-write instead
of receiving it pickled). The child runs the function and leaves with ``os._exit``: none of the
parent's cleanup (locks, temporary folders, buffered output) runs twice.
"""

from __future__ import annotations

import gc
import os
import pickle
import select
import signal
from collections.abc import Callable


class ChildKilled(MemoryError):
    """A forked child ended by SIGKILL before it handed anything back (the kernel's OOM killer)."""


class Child:
    """A forked child running one function; :meth:`join` returns its result or raises its exception."""

    def __init__(self, pid: int, fd: int):
        self.pid, self.fd = pid, fd

    def join(self):
        chunks = []
        try:
            while chunk := os.read(self.fd, 1 << 20):
                chunks.append(chunk)
        finally:
            os.close(self.fd)
            _, status = os.waitpid(self.pid, 0)
        data = b"".join(chunks)
        if not data:
            if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
                # SIGKILL with nothing handed back: the kernel's out-of-memory killer, in practice (nothing of
                # twin sends it but Child.kill, after the parent has failed): said as running out of memory is
                raise ChildKilled(f"the build's emitting process was killed ({_how(status)}: most likely out of memory)")
            raise RuntimeError(f"the build's emitting process ended without a result ({_how(status)})")
        ok, value = pickle.loads(data)
        if not ok:
            raise value
        return value

    def done(self) -> bool:
        """True once the child has handed over its result or ended (its pipe is readable), without
        waiting: the parent works on while it is False."""
        return bool(select.select([self.fd], [], [], 0)[0])

    def kill(self) -> None:
        """Stop the child (the parent failed): nothing of it outlives the parent's error."""
        for step in (lambda: os.kill(self.pid, signal.SIGKILL), lambda: os.close(self.fd), lambda: os.waitpid(self.pid, 0)):
            try:
                step()
            except OSError:  # already gone, closed or reaped
                pass


def _how(status: int) -> str:
    return f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.waitstatus_to_exitcode(status)}"


def apart(fn: Callable[[], object]) -> Child:
    """Run ``fn`` in a forked child now; the parent goes on at once."""
    gc.freeze()  # the objects both share stay out of the child's collections (no copy-on-write of them)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(r)
        code = 0
        try:
            payload = pickle.dumps((True, fn()))
        except BaseException as e:  # noqa: BLE001 - handed to the parent, which raises it
            code = 1
            try:
                payload = pickle.dumps((False, e))
            except Exception:  # noqa: BLE001 - an exception that does not pickle
                payload = pickle.dumps((False, RuntimeError(f"{type(e).__name__}: {e}")))
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(w, view):]
        finally:
            os._exit(code)
    os.close(w)
    gc.unfreeze()
    return Child(pid, r)
