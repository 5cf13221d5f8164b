"""The progress line every long command shows on stderr: a spinner, the step's own label (what is
running now, e.g. ``compile: placement``, ``scenario x.yaml: power: busways ...``) and the time spent.

One owner so that diff, simulate and build show the same thing, and so that a command starts showing
it before its heavy imports (the first output within a second). With ``enabled`` false (``--json``,
``--quiet``) the label callable does nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def steps(console, enabled: bool = True, first: str = "start") -> Iterator[Callable[[str], None]]:
    """A context whose value is ``say(label)``: shows ``label`` as the current step until the next."""
    if not enabled or not console.is_terminal:  # a pipe or a file gets no progress (not even a blank line)
        yield lambda _label: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console, transient=True) as prog:
        task = prog.add_task(first, total=None)
        prog.refresh()  # drawn now, not at the first refresh tick
        yield lambda label: prog.update(task, description=label, refresh=True)
