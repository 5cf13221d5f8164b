"""The commands the documentation shows, read from its Markdown (docs/**/*.md and README.md).

Every line of a fenced code block that runs ``twin`` (``twin ...``, ``$ twin ...``, ``sudo twin ...``,
``X=Y twin ...``, ``... && twin ...``, ``python -m twin ...``) is a shown command. A ``console`` block is
a transcript: its ``$ `` lines are commands and the lines after each, up to the next, the output it
shows (``...`` stands for any text, as in a doctest); ``# exit N`` on the command line is the exit code
it shows (0 when none is said).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(```+|~~~+)\s*([A-Za-z0-9_-]*)")
EXIT = re.compile(r"#\s*exit (\d+)")


@dataclass
class Shown:
    doc: str  # repository path of the Markdown file
    line: int
    text: str  # the line as written
    args: list[str]  # twin's arguments
    output: list[str] | None = None  # console blocks: the output shown after it
    exit: int = 0
    where: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text.strip()}"


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def twin_args(line: str) -> list[list[str]]:
    """The twin invocations on one shell line, each as its argument list (without ``twin``)."""
    line = re.sub(r"\$\([^)]*\)", "X", line)  # command substitutions: their value is not twin's concern
    line = re.sub(r"\s\[[^\]]*\]", "", line)  # usage notation: [--json] is an optional argument
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError:
        return []
    parts, cur = [], []
    for t in tokens:
        if t in ("&&", "||", ";", "|"):
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    parts.append(cur)
    out = []
    for p in parts:
        while p and (p[0] in ("sudo", "$") or re.match(r"^[A-Z_][A-Z0-9_]*=", p[0])):
            p = p[1:]
        if p[:1] == ["twin"]:
            out.append(p[1:])
        elif p[:3] in (["python", "-m", "twin"], ["python3", "-m", "twin"]):
            out.append(p[3:])
    return out


def shown_commands() -> list[Shown]:
    found: list[Shown] = []
    for path in documents():
        doc = str(path.relative_to(ROOT))
        lang, fence = None, None
        current: Shown | None = None
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = FENCE.match(line)
            if fence is None and m:
                fence, lang, current = m.group(1), m.group(2), None
                continue
            if fence is not None and line.startswith(fence):
                fence = lang = current = None
                continue
            if fence is None or lang in ("yaml", "json", "python", "text"):
                continue
            if lang == "console":
                if line.startswith("$ "):
                    calls = twin_args(line[2:])
                    code = EXIT.search(line)
                    current = Shown(doc, n, line, calls[0] if calls else [], [], int(code.group(1)) if code else 0)
                    if calls:
                        found.append(current)
                elif current is not None:
                    current.output.append(line)
                continue
            for args in twin_args(line):
                found.append(Shown(doc, n, line, args))
    return found


def parse_problem(args: list[str]) -> str | None:
    """Why ``twin ARGS`` would not parse (an unknown command or option, a missing argument, a bad value);
    None when it parses. Nothing runs: the CLI builds each command's context and stops. (Typer carries
    its own copy of click, so its classes are recognised by what they do, not by click's names.)"""
    import typer

    from twin.cli.app import app

    cmd = typer.main.get_command(app)
    ctx = None
    rest = list(args)
    try:
        while True:
            ctx = cmd.make_context(cmd.name or "twin", rest, parent=ctx)
            if not hasattr(cmd, "resolve_command"):
                return None
            rest = [*getattr(ctx, "_protected_args", getattr(ctx, "protected_args", [])), *ctx.args]
            if not rest:
                return "no command given"
            _name, cmd, rest = cmd.resolve_command(ctx, rest)
    except Exception as e:  # noqa: BLE001 - click's usage errors and its Exit, from typer's copy
        if type(e).__name__ == "Exit" and getattr(e, "exit_code", 1) == 0:
            return None
        if hasattr(e, "format_message"):
            return e.format_message()
        raise


OUTPUTS = ("-o", "--html", "--plot-dir")  # options whose value is a path a command writes


def runnable(args: list[str]) -> bool:
    """A shown command the tests run as it is: a lab example's validate, build, simulate or diff whose input
    files are the repository's (the Meta-size sites, root, a NetBox or a cluster are run by their own tests)."""
    if not args or args[0] not in ("validate", "build", "simulate", "diff"):
        return False
    inputs = [a for i, a in enumerate(args[1:], 1) if not a.startswith("-") and args[i - 1] not in OUTPUTS]
    sites = [a for a in inputs if a.startswith(("sites/", "generated/"))]
    return bool(sites) and all((ROOT / a).exists() for a in inputs) and all("/lab-" in a for a in sites)


def in_tmp(args: list[str], tmp: Path) -> list[str]:
    """``args`` with every path it writes moved into ``tmp`` (a build without ``-o`` too)."""
    out = [str(tmp / Path(a).name) if i and args[i - 1] in OUTPUTS else a for i, a in enumerate(args)]
    if out[0] == "build" and "-o" not in out:
        out += ["-o", str(tmp / "build")]
    return out
