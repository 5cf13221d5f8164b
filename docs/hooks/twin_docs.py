"""MkDocs hook: the documentation's generated parts, filled in at build time so that none is copied by hand.

A page asks for a part with an HTML comment on a line of its own; an unknown part, an unknown number or a
figure the build did not draw fails the build (the site is built with ``--strict``):

``<!-- twin:help -->``
    every command's and sub-command's ``--help``, from the CLI itself.
``<!-- twin:commands-table -->``
    the README's command table (the one place it is written).
``<!-- twin:language site|scenario|sweep -->``
    a language's field reference, rendered from its models (what ``twin schema`` writes to ``schemas/``).
``<!-- twin:language-versions -->`` / ``<!-- twin:language-changelog -->``
    each language's current version, and every version's changes (``twin/lang/versions.py``).
``<!-- twin:limits -->``
    the cost limits and their defaults (``twin/lang/limits.py``).
``<!-- twin:output-files -->``
    every file of a build of the lab example, folder by folder, with counts and sizes.
``<!-- twin:envelope -->``
    a real ``--json`` envelope (``twin validate --fast --json`` of the lab example).
``<!-- twin:figure report/NAME.svg caption -->``
    a picture of the review page of the lab example, built with ``scenarios/lab-twins.yaml``.
``{{ n.NAME }}``
    a number from ``docs/numbers.yml``, which the README states too (tests/test_docs.py holds them equal), or
    a language's current version (``site_version``, ``scenario_version``, ``sweep_version``), or the job
    twin's stated error (``stated_error``, ``twin.twins.workload.validation.STATED_ERROR``).

The lab example is built once per process into a temporary folder (about 3 s), or read from the folder
``$TWIN_DOCS_LAB_BUILD`` names (the tests pass the one their session built).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path, PurePosixPath

import yaml
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
MARK = re.compile(r"^<!-- twin:([a-z-]+)(?: (.*?))? -->$", re.M)
NUMBER = re.compile(r"\{\{ *n\.([A-Za-z0-9_]+) *\}\}")
LAB_SITE = "sites/lab-2zone.yaml"
LAB_SCENARIO = "scenarios/lab-twins.yaml"
FIGURES = "figures"  # where the lab build's pictures go in the site

_state: dict = {}


def lab_build() -> Path:
    """The folder of ``twin build sites/lab-2zone.yaml --scenario scenarios/lab-twins.yaml``."""
    given = os.environ.get("TWIN_DOCS_LAB_BUILD")
    if given:
        return Path(given)
    if "lab" not in _state:
        from twin.build import build

        tmp = Path(tempfile.mkdtemp(prefix="twin-docs-lab-"))
        _state["tmp"] = tmp
        build(ROOT / LAB_SITE, tmp / "lab-2zone", scenario=ROOT / LAB_SCENARIO)
        _state["lab"] = tmp / "lab-2zone"
    return _state["lab"]


def numbers() -> dict[str, str]:
    data = yaml.safe_load((ROOT / "docs" / "numbers.yml").read_text(encoding="utf-8"))
    from twin.lang.versions import CURRENT
    from twin.twins.workload.validation import STATED_ERROR

    out = {k: str(v["value"]) for k, v in data.items()}
    out.update({f"{lang}_version": str(v) for lang, v in CURRENT.items()})  # the languages' versions, from the code
    out["stated_error"] = f"{100 * STATED_ERROR:.1f}%"  # the job twin's stated error, as sweeps and the review use it
    return out


# --- the parts ---------------------------------------------------------------------------------------

def commands_help() -> str:
    import click
    import typer

    from twin.cli.app import app

    group = typer.main.get_command(app)
    out = []

    def one(cmd, path: list[str], parent=None):
        ctx = click.Context(cmd, info_name=path[-1], parent=parent, terminal_width=100, max_content_width=100)
        text = cmd.get_help(ctx)
        if len(path) > 1:
            out.extend([f"## `{' '.join(path)}`", "", "```text", text.rstrip(), "```", ""])
        for name, sub in sorted(getattr(cmd, "commands", {}).items()) if len(path) > 1 else []:
            one(sub, [*path, name], ctx)
        return ctx

    root_ctx = one(group, ["twin"])
    out[:0] = ["## `twin`", "", "```text", group.get_help(root_ctx).rstrip(), "```", ""]
    for name, cmd in group.commands.items():  # in the order the CLI lists them
        one(cmd, ["twin", name], root_ctx)
    return "\n".join(out)


def commands_table() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.split("\n## Commands", 1)[1].split("| command | what it does |", 1)[1].splitlines()
    table = ["| command | what it does |"]
    for line in lines[1:]:
        if not line.startswith("|"):
            break
        table.append(line)
    return "\n".join(table)


def language(name: str) -> str:
    from twin.lang.reference import render
    from twin.schema import LANGUAGES

    if name not in LANGUAGES:
        raise PluginError(f"twin:language {name}: expected one of {', '.join(LANGUAGES)}")
    root, _schema, _ref, title, partial = LANGUAGES[name]
    body = render(root, title, partial).split("\n", 4)[4]  # without its title and "do not edit" line
    return body


def language_versions() -> str:
    from twin.lang.versions import CURRENT

    rows = ["| language | current version | written as |", "|---|---:|---|"]
    rows += [f"| {lang} | {v} | `version: {v}` at the top of the file |" for lang, v in CURRENT.items()]
    return "\n".join(rows)


def language_changelog() -> str:
    from twin.lang.versions import CHANGES

    out = []
    for lang in ("site", "scenario", "sweep"):
        out += [f"### The {lang} language", ""]
        for c in sorted((c for c in CHANGES if c.language == lang), key=lambda c: -c.version):
            out += [f"- **Version {c.version}** ({c.date}): {c.summary}"]
        out.append("")
    return "\n".join(out)


def limits() -> str:
    from twin.lang.limits import LIMITS

    rows = ["| limit | default | counts |", "|---|---:|---|"]
    rows += [f"| `{x.name}` | {x.default:,.0f} | {x.what} |" for x in LIMITS.values()]
    return "\n".join(rows)


def output_files() -> str:
    manifest = json.loads((lab_build() / "manifest.json").read_text(encoding="utf-8"))
    folders: dict[str, list[tuple[str, int]]] = {}
    for a in manifest["artifacts"]:
        p = PurePosixPath(a["path"])
        folders.setdefault(str(p.parent), []).append((p.name, a["bytes"]))
    rows = ["| folder | files | bytes |", "|---|---|---:|"]
    for folder in sorted(folders, key=lambda f: (f != ".", f)):
        files = sorted(folders[folder])
        names = ", ".join(f"`{n}`" for n, _ in files) if len(files) <= 4 else \
            f"{len(files)} files: `{files[0][0]}` ... `{files[-1][0]}`"
        label = "(top)" if folder == "." else f"`{folder}/`"
        rows.append(f"| {label} | {names} | {sum(s for _, s in files):,} |")
    return "\n".join(rows)


def envelope() -> str:
    from typer.testing import CliRunner

    from twin.cli.app import app

    here = os.getcwd()
    os.chdir(ROOT)  # the example's path as a user in the repository writes it
    try:
        r = CliRunner().invoke(app, ["validate", LAB_SITE, "--fast", "--json"])
    finally:
        os.chdir(here)
    if r.exit_code != 0:
        raise PluginError(f"twin validate {LAB_SITE} --fast --json exited {r.exit_code}: {r.stderr[:300]}")
    doc = json.loads(r.stdout)
    return "```json\n" + json.dumps(doc, indent=2)[:4000] + "\n```"


def figure(arg: str, page_uri: str) -> str:
    name, _, caption = arg.partition(" ")
    src = lab_build() / name
    if not name.startswith("report/") or not src.is_file():
        raise PluginError(f"twin:figure {name}: the lab build drew no such picture")
    _state.setdefault("figures", set()).add(name)
    depth = len(PurePosixPath(page_uri).parent.parts)
    rel = "../" * depth + f"{FIGURES}/{PurePosixPath(name).name}"
    return f"![{caption or name}]({rel})"


# --- MkDocs events -----------------------------------------------------------------------------------

def on_config(config):
    """The docs describe this checkout's twin, whatever else is installed (MkDocs restores sys.path after
    loading a hook, so this is done when the build starts)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return config


def on_files(files, config):
    """Every picture of the lab build's review becomes a file of the site (only those a page shows are
    linked; the rest are there for a reader who follows the report)."""
    for svg in sorted((lab_build() / "report").glob("*.svg")):
        files.append(File.generated(config, f"{FIGURES}/{svg.name}", content=svg.read_bytes()))
    return files


def on_page_markdown(markdown: str, page, config, files):
    uri = page.file.src_uri
    nums = numbers()

    def part(m: re.Match) -> str:
        kind, arg = m.group(1), (m.group(2) or "").strip()
        if kind == "help":
            return commands_help()
        if kind == "commands-table":  # its links are the README's, relative to the repository root
            up = "../" * len(PurePosixPath(uri).parent.parts)
            return commands_table().replace("](docs/", f"]({up}")
        if kind == "language":
            return language(arg)
        if kind == "language-versions":
            return language_versions()
        if kind == "language-changelog":
            return language_changelog()
        if kind == "limits":
            return limits()
        if kind == "output-files":
            return output_files()
        if kind == "envelope":
            return envelope()
        if kind == "figure":
            return figure(arg, uri)
        raise PluginError(f"{uri}: unknown generated part 'twin:{kind}'")

    def number(m: re.Match) -> str:
        if m.group(1) not in nums:
            raise PluginError(f"{uri}: unknown number '{m.group(1)}' (docs/numbers.yml has {', '.join(sorted(nums))})")
        return nums[m.group(1)]

    return NUMBER.sub(number, MARK.sub(part, markdown))


def on_shutdown():
    tmp = _state.pop("tmp", None)
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    _state.clear()
