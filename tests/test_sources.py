"""Sources live in the repository: every citation key resolves in docs/sources.md, every catalog entry cites
a publication or says "assumed", and nothing points at a file outside the repository."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from twin.lang.catalog import builtin, campus

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (ROOT / "docs" / "sources.md").read_text()
LISTED = set(re.findall(r"^\| `\[([a-z0-9.-]+)\]` \|", SOURCES, re.M))
# a key: lower-case, at least 3 characters, with a digit or a hyphen (so ``x[i]`` or ``[row]`` in prose is not one)
KEY = re.compile(r"\[([a-z][a-z0-9.-]{2,})\]")
TEXT = {".py", ".yaml", ".yml", ".md", ".j2", ".json", ".csv", ".toml", ".txt", ".cfg", ".conf", ".svg"}
SKIP = {".git", "__pycache__", ".venv", "venv", "build", "dist", ".pytest_cache", ".hypothesis"}


def keys_in(text: str) -> set[str]:
    return {k for k in KEY.findall(text) if re.search(r"[0-9-]", k)}


def citing_text(path: Path) -> list[str]:
    """The parts of a file that carry citations: YAML comments and ``source:`` values, Python comments
    and docstrings (not code, where a bracketed name is a list or an index)."""
    text = path.read_text()
    if path.suffix == ".yaml":
        out = []
        for line in text.splitlines():
            if "#" in line:
                out.append(line[line.index("#"):])
            if line.strip().startswith("source:"):
                out.append(line)
        return out
    out = [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT]
    tree = ast.parse(text)
    for node in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))]:
        doc = ast.get_docstring(node)
        if doc:
            out.append(doc)
    return out


def test_sources_list_the_primary_publications():
    assert {"llama3", "meta-roce", "rail-only", "al-fares08", "h100", "qm9700", "ieee-802.3bs", "nccl-tests"} <= LISTED
    assert "arXiv 2407.21783" in SOURCES and "arXiv 2307.12169" in SOURCES


def test_every_catalog_entry_cites_a_listed_source_or_says_assumed():
    cat = builtin()
    entries = {**cat.chassis, **cat.switches, **cat.media, **campus().media}
    assert len(entries) >= 10
    for name, entry in entries.items():
        cited = keys_in(entry.source)
        assert cited <= LISTED, (name, cited - LISTED)
        assert cited or "assumed" in entry.source, name


def test_every_cited_key_is_listed():
    files = [*ROOT.glob("sites/*.yaml"), *ROOT.glob("twin/lang/catalog/*.yaml"),
             *ROOT.glob("twin/**/*.py"), *ROOT.glob("tests/**/*.py"), *ROOT.glob("bench/**/*.py")]
    used: dict[str, set[str]] = {}
    for path in files:
        for part in citing_text(path):
            for k in keys_in(part):
                used.setdefault(k, set()).add(str(path.relative_to(ROOT)))
    assert {"llama3", "meta-roce", "ns2023", "al-fares08"} <= set(used)  # the scan sees the citations
    unknown = {k: sorted(v) for k, v in used.items() if k not in LISTED}
    assert unknown == {}


def test_nothing_cites_a_file_outside_the_repository():
    needles = ("facts" + ".md", "shared/" + "reference")
    hits = []
    for path in ROOT.rglob("*"):
        if path.suffix not in TEXT or not path.is_file() or SKIP & set(path.relative_to(ROOT).parts):
            continue
        # SONiC's YANG models are test data the conformance test reads from ../shared (never copied
        # here), not a source a figure cites
        text = path.read_text(errors="replace").replace("shared/" + "reference/sonic-yang", "")
        hits += [f"{path.relative_to(ROOT)}: {n}" for n in needles if n in text]
    assert hits == []
