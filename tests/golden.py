"""What differs between a built folder and a committed one, said so a reviewer can act on it: the files
missing on either side, then each differing file with the first lines that differ (a unified diff
excerpt; a binary file by its sizes).

>>> print(differences({"a.txt": b"x\\ny\\n", "b.bin": b"\\0"}, {"a.txt": b"x\\nz\\n", "c": b""}))
only in the build: b.bin
only in the committed folder: c
1 file differs: a.txt
--- committed/a.txt
+++ built/a.txt
@@ -1,2 +1,2 @@
 x
-z
+y
"""

from __future__ import annotations

import difflib
from pathlib import Path


def files_under(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` by its relative POSIX path."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def differences(built: dict[str, bytes], committed: dict[str, bytes], files: int = 5, lines: int = 20) -> str:
    """'' when equal; else the missing files and, for the first ``files`` differing files, up to ``lines``
    lines of their unified diff."""
    out = []
    if extra := sorted(set(built) - set(committed)):
        out.append(f"only in the build: {', '.join(extra)}")
    if missing := sorted(set(committed) - set(built)):
        out.append(f"only in the committed folder: {', '.join(missing)}")
    differ = [rel for rel in sorted(set(built) & set(committed)) if built[rel] != committed[rel]]
    if differ:
        out.append(f"{len(differ)} file{'s' * (len(differ) != 1)} differ{'s' * (len(differ) == 1)}: {', '.join(differ)}")
    for rel in differ[:files]:
        out.append(excerpt(rel, built[rel], committed[rel], lines))
    if len(differ) > files:
        out.append(f"... and {len(differ) - files} more")
    return "\n".join(out)


def excerpt(rel: str, new: bytes, old: bytes, lines: int) -> str:
    try:
        a, b = old.decode("utf-8").splitlines(), new.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return f"{rel}: binary, {len(old)} bytes committed, {len(new)} built"
    diff = list(difflib.unified_diff(a, b, f"committed/{rel}", f"built/{rel}", n=1, lineterm=""))
    if not diff:  # same lines, other line endings or a final newline
        return f"{rel}: the same lines, different bytes (line endings or the final newline)"
    cut = [d if len(d) <= 300 else d[:300] + " ..." for d in diff[:lines]]
    return "\n".join(cut + ([f"... ({len(diff) - lines} more diff lines)"] if len(diff) > lines else []))
