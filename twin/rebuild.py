"""A rebuild writes only what changed: the output it replaces, as the files of the new one see it.

A build writes its files into a sibling folder and swaps it in (:mod:`twin.output`). When it replaces
an output, a file whose bytes that output already holds at the same path (proved by sha256 at the
claim, and the same inode, size, mtime and ctime since) is hard-linked from it instead of written: a
link costs a fraction of a new inode, and an unchanged file keeps its inode.

When the output being replaced was built by the same twin from the same spec (and scenario), every
file is expected to come out the same. Then the links wait (:attr:`Replacing.defer`): a folder is
created only for a file written. At the end (:meth:`Replacing.settle`), if every file did come out
the same, and the manifest too, nothing was changed and the previous output is kept as it is: no
folder churn, no swap, no removal (1,540 folders and 3,500 files at 24K GPUs). If anything differs,
the waiting files are linked then and the build swaps as usual.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from pathlib import Path

from twin.folder import JSON_LIMIT, MANIFEST, FolderError, read_bytes
from twin.leftovers import MARK


class Replacing:
    """The output a build replaces, seen from one process writing into the build's sibling folder."""

    def __init__(self, out_dir: str, proved: dict[str, tuple], defer: bool = False):
        self.out_dir = out_dir
        self.proved = proved  # rel -> (inode, size, mtime, ctime, sha256) of the old output's files
        self.defer = defer  # hold the links until the end: the output is expected not to change
        self.linked: dict[str, tuple] = {}  # rel -> identity right after this process linked it
        self.waiting: dict[str, tuple] = {}  # rel -> proved identity: the same bytes, not linked yet
        self.differs = False  # a file was written that the old output does not hold as it is

    def take(self, rel: str, digest: tuple[str, int] | None, target: str, made: set[str]) -> bool:
        """True when ``rel`` needs no writing: the old output holds ``digest``'s bytes there, unchanged
        since its proof, and it is now linked to ``target`` (or waits, :attr:`defer`). False when it
        must be written (and then the output differs)."""
        ident = self._same(rel, digest)
        if ident is not None:
            if self.defer:
                self.waiting[rel] = ident
                return True
            folder_for(target, made)
            if self._link(rel, ident, target):
                return True
        self.differs = True
        folder_for(target, made)
        return False

    def written(self, rel: str, digest: tuple[str, int], target: str) -> None:
        """A file already written to ``target`` as it was rendered (:func:`twin.output.write_stream`), its
        digest known only now. The old output holds the same bytes: the copy just written goes, and the old
        one waits with the other links or is linked in its place (an unchanged file keeps its inode). Not
        the same: the output differs."""
        ident = self._same(rel, digest)
        if ident is None:
            self.differs = True
        elif not self.defer:
            os.rename(target, target + ".new")
            if self._link(rel, ident, target):
                os.unlink(target + ".new")
            else:  # the old copy could not be linked: the new one stays
                os.rename(target + ".new", target)
                self.differs = True
        else:
            os.unlink(target)
            folder = os.path.dirname(target)
            for _ in range(rel.count("/")):  # the folders it alone was in: the output holds the manifest alone again
                try:
                    os.rmdir(folder)
                except OSError:  # not empty
                    break
                folder = os.path.dirname(folder)
            self.waiting[rel] = ident

    def _same(self, rel: str, digest: tuple[str, int] | None) -> tuple | None:
        ident = self.proved.get(rel)
        if digest is None or ident is None or (ident[4], ident[1]) != digest:
            return None
        try:
            st = os.lstat(f"{self.out_dir}/{rel}")
        except OSError:
            return None
        same = stat.S_ISREG(st.st_mode) and (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) == ident[:4]
        return ident if same else None

    def _link(self, rel: str, ident: tuple, target: str) -> bool:
        """Hard-link ``rel`` of the old output to ``target``; False, nothing left at ``target``, when the
        link fails or is not that very inode. Its identity after the link (the same inode, size and
        mtime, the link's ctime) is the proved one from then on: the check before the swap hashes it
        again only if it changes after that."""
        try:
            os.link(f"{self.out_dir}/{rel}", target, follow_symlinks=False)
            st = os.lstat(target)  # our own entry: the very inode proved, a regular file (not one swapped in meanwhile)
            if stat.S_ISREG(st.st_mode) and (st.st_ino, st.st_size, st.st_mtime_ns) == ident[:3]:
                self.proved[rel] = self.linked[rel] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, ident[4])
                return True
            os.unlink(target)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(target)
        return False

    def handed_back(self) -> tuple[dict[str, tuple], dict[str, tuple], bool]:
        """What this process did, for the process that swaps (:meth:`adopt`): a forked writer's links
        and waiting files."""
        return dict(self.linked), dict(self.waiting), self.differs

    def adopt(self, handed: tuple[dict[str, tuple], dict[str, tuple], bool]) -> None:
        linked, waiting, differs = handed
        for rel, ident in linked.items():
            if rel in self.proved:
                self.proved[rel] = self.linked[rel] = ident
        self.waiting.update(waiting)
        self.differs |= differs

    def settle(self, folder: Path) -> bool:
        """At the end of the writing: True when nothing changed (every file of the old output came out
        the same, no other file was written, and the new manifest is the old one byte for byte), so
        the old output stays as it is. Otherwise every waiting file is linked into ``folder`` now;
        False. RuntimeError names a waiting file that changed since its proof (the check before the
        swap then says the output was edited during the build)."""
        if self.defer and not self.differs and self.waiting.keys() == self.proved.keys() and _only_manifest(folder):
            with contextlib.suppress(OSError):
                if (Path(self.out_dir) / MANIFEST).read_bytes() == (folder / MANIFEST).read_bytes():
                    return True
        made: set[str] = set()
        base = os.fspath(folder)
        for rel, ident in sorted(self.waiting.items()):
            target = f"{base}/{rel}"
            folder_for(target, made)
            if self._same(rel, (ident[4], ident[1])) is None or not self._link(rel, ident, target):
                raise ChangedDuringBuild(rel)
        self.waiting.clear()
        return False


class ChangedDuringBuild(Exception):
    """A file of the old output the new one was to link changed while the build rendered."""


def folder_for(target: str, made: set[str]) -> None:
    """The folder ``target`` goes in, made once (``made``: the folders made so far)."""
    parent = os.path.dirname(target)
    if parent not in made:
        os.makedirs(parent, exist_ok=True)
        made.add(parent)


def _only_manifest(folder: Path) -> bool:
    """The build's sibling ``folder`` holds the manifest alone (and twin's mark, :mod:`twin.leftovers`)."""
    with os.scandir(folder) as it:
        return [(e.name, e.is_file(follow_symlinks=False)) for e in it if e.name != MARK] == [(MANIFEST, True)]


def folders_of(tmp: Path, files: dict[str, tuple] | set[str]) -> None:
    """Make in ``tmp`` every folder the relative paths ``files`` lie in (the old output's, made ahead of
    the new one's files: :func:`twin.output.claimed`)."""
    for folder in sorted({rel.rpartition("/")[0] for rel in files} - {""}):
        os.makedirs(tmp / folder, exist_ok=True)


def prune(tmp: Path) -> None:
    """Remove the folders made ahead (:func:`folders_of`) that the new output left empty, deepest first."""
    for root, _dirs, files in os.walk(tmp, topdown=False):
        if root != os.fspath(tmp) and not files:
            with contextlib.suppress(OSError):  # not empty: a folder below it holds a file
                os.rmdir(root)


def old_manifest(out_dir: Path) -> dict:
    """The header of the manifest of the output being replaced ({} when there is none or it is not
    JSON): only a hint, the claim proves the folder."""
    try:
        old = json.loads(read_bytes(out_dir, MANIFEST, JSON_LIMIT))
    except (FolderError, ValueError, RuntimeError, OSError):  # RuntimeError: a link loop (the claim says so in one line)
        return {}
    return {k: v for k, v in old.items() if k != "artifacts"} if isinstance(old, dict) else {}


def spec_edited(old: dict, spec_path: str | Path) -> bool:
    """The output being replaced (its manifest's header ``old``) was built from another version of this
    spec file: most of its folders come back, so the claim makes them ahead (:func:`twin.output.claimed`)."""
    try:
        return "spec_sha256" in old and old["spec_sha256"] != hashlib.sha256(Path(spec_path).read_bytes()).hexdigest()
    except OSError:
        return False
