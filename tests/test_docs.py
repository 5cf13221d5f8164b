"""The documentation cannot rot: the site builds in strict mode (a broken link fails it), every command it
shows parses against the CLI and names example files that exist, every transcript it shows (a ``console``
block) runs against the example sites with its shown output and exit code, and the numbers the README and
the docs share are written once (docs/numbers.yml). The site is built into tmp, never into the work tree."""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, built_with_scenario, twin_in_process
from tests.docs_examples import in_tmp, parse_problem, runnable, shown_commands

pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[docs]')")
pytest.importorskip("material", reason="mkdocs-material is not installed (pip install -e '.[docs]')")


def mkdocs_build(tmp: Path, config: Path = ROOT / "mkdocs.yml") -> subprocess.CompletedProcess:
    env = {**os.environ, "TWIN_DOCS_LAB_BUILD": str(built_with_scenario("lab-2zone", "lab-twins")), "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(tmp / "site")],
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=300)


def test_site_builds_strict_with_its_generated_reference(tmp_path):
    r = mkdocs_build(tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    site = tmp_path / "site"
    commands = (site / "reference" / "commands" / "index.html").read_text(encoding="utf-8")
    import typer

    from twin.cli.app import app

    group = typer.main.get_command(app)
    names = [f"{n} {sub}" for n, c in group.commands.items() for sub in getattr(c, "commands", {})] + \
        [n for n, c in group.commands.items() if not hasattr(c, "commands")]
    assert {"plan", "upgrade", "netbox push", "validate-jobs"} <= set(names)
    for name in names:
        assert f"Usage: twin {name} " in commands, name  # each command's own --help, every one the CLI has
    from twin.lang.limits import LIMITS
    from twin.lang.site.models import Fabric

    assert all(f"<code>{name}</code>" in (site / "reference" / "site" / "index.html").read_text(encoding="utf-8") for name in Fabric.model_fields)
    limits = (site / "reference" / "inputs" / "index.html").read_text(encoding="utf-8")
    assert all(f"{x.default:,.0f}" in limits for x in LIMITS.values())
    review = (site / "howto" / "read-the-review" / "index.html").read_text(encoding="utf-8")
    for fig in ("floor-lab1.svg", "fabric.svg", "power-whole.svg", "twin-job-step.svg"):
        assert f'src="../../figures/{fig}"' in review and (site / "figures" / fig).stat().st_size > 1000, fig
    assert not (ROOT / "site").exists()


def _copy(tmp: Path) -> Path:
    """The site's config and pages copied into tmp (the hook and the code stay the checkout's)."""
    shutil.copytree(ROOT / "docs", tmp / "docs", ignore=shutil.ignore_patterns("hooks"))
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config["hooks"] = [str(ROOT / "docs" / "hooks" / "twin_docs.py")]
    path = tmp / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_a_broken_link_fails_the_strict_build(tmp_path):
    config = _copy(tmp_path)
    page = tmp_path / "docs" / "howto" / "compare-designs.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [the review](read-the-reveiw.md).\n", encoding="utf-8")
    r = mkdocs_build(tmp_path, config)
    assert r.returncode != 0
    assert "contains a link 'read-the-reveiw.md'" in r.stderr and "Aborted with 1 warnings in strict mode" in r.stdout, r.stderr[-2000:]


def test_a_new_page_outside_the_nav_builds_and_an_unknown_generated_part_fails(tmp_path):
    config = _copy(tmp_path)
    (tmp_path / "docs" / "new-page.md").write_text("# A helper's new page\n\nSee [the review](howto/read-the-review.md).\n", encoding="utf-8")
    ok = mkdocs_build(tmp_path, config)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert (tmp_path / "site" / "new-page" / "index.html").is_file()
    (tmp_path / "docs" / "new-page.md").write_text("# A page\n\n{{ n.no_such_number }}\n", encoding="utf-8")
    bad = mkdocs_build(tmp_path, config)
    assert bad.returncode != 0 and "unknown number 'no_such_number'" in bad.stderr


SHOWN = shown_commands()


def test_every_shown_command_parses_and_names_files_that_exist():
    assert len(SHOWN) >= 40, "the reader of the docs' code blocks finds too few commands"
    problems = []
    for s in SHOWN:
        if (p := parse_problem(s.args)) is not None:
            problems.append(f"{s}: {p}")
        for a in s.args:
            if re.match(r"^(sites|scenarios|sweeps)/[a-z0-9-]+\.yaml$", a) and not (ROOT / a).is_file():
                problems.append(f"{s}: {a} does not exist")
    assert problems == []


TRANSCRIPTS = sorted({" ".join(s.args): s for s in SHOWN if s.output is not None}.values(), key=str)


@pytest.mark.parametrize("shown", TRANSCRIPTS, ids=lambda s: " ".join(s.args)[:60])
def test_every_transcript_runs_with_its_shown_output(shown, tmp_path):
    """Each distinct command of a console block runs (in this process, through the CLI), against the
    example sites, writing what it writes under ``/tmp/`` into tmp; every place it is shown, its output
    matches what is shown (``...`` is any text)."""
    args = [re.sub(r"^/tmp/", f"{tmp_path}/", a) for a in shown.args]  # what it writes under /tmp goes to tmp_path
    r = twin_in_process(*args)
    got = (r.stdout + r.stderr).replace(f"{tmp_path}/", "/tmp/")
    for s in SHOWN:
        if s.output is not None and s.args == shown.args:
            assert r.returncode == s.exit, f"{s}: exit {r.returncode}, shown {s.exit}\n{got[-2000:]}"
            want = "\n".join(s.output).strip() + "\n"
            ok = doctest.OutputChecker().check_output(want, got.strip() + "\n", doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
            assert ok, f"{s}: shown\n{want}\nbut it printed\n{got[:3000]}"


RUNS = sorted({" ".join(s.args): s for s in SHOWN if s.output is None and runnable(s.args)
               and not any(t.args == s.args for t in TRANSCRIPTS)}.values(), key=str)


@pytest.mark.parametrize("shown", RUNS, ids=lambda s: " ".join(s.args)[:60])
def test_every_lab_command_shown_runs(shown, tmp_path):
    """The lab example's commands shown without output run as written (their outputs into tmp): exit 0, or
    1 for a diff that finds a change."""
    r = twin_in_process(*in_tmp(shown.args, tmp_path))
    assert r.returncode in ((0, 1) if shown.args[0] == "diff" else (0,)), f"{shown}: exit {r.returncode}\n{r.stderr[-2000:]}"


def test_readme_and_docs_share_their_numbers():
    """Every number the README states from docs/numbers.yml is the value written there, and the lab
    example's are what the lab really is (its validate line)."""
    numbers = yaml.safe_load((ROOT / "docs" / "numbers.yml").read_text(encoding="utf-8"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [k for k, v in numbers.items() if v.get("readme") and str(v["value"]) not in readme]
    assert missing == []
    used = {m for p in (ROOT / "docs").rglob("*.md") for m in re.findall(r"\{\{ *n\.([A-Za-z0-9_]+) *\}\}", p.read_text(encoding="utf-8"))}
    known = set(numbers) | {"site_version", "scenario_version", "sweep_version", "stated_error"}  # the hook adds these from the code
    assert used <= known and used, used - known
    r = twin_in_process("validate", "sites/lab-2zone.yaml")
    n = {k: str(v["value"]) for k, v in numbers.items()}
    assert f"ok: {n['lab_gpus']} GPUs in {n['lab_racks']} racks, 0 fail, 0 warning(s) of {n['lab_checks']} checks" in r.stdout


def test_readme_fits_on_two_screens_its_links_resolve_and_the_help_points_to_the_docs():
    """The README stays a front page (under 200 lines: what twin is, a picture, set-up, three commands, the
    docs, contributing); every file it links or shows exists (the site's strict build does not read it); and
    ``twin --help`` and a bare ``twin`` name the documentation, which exists."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    for heading in ("## Quick start", "## Three commands", "## Documentation", "## Contributing"):
        assert f"\n{heading}" in text, heading
    links = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", t)]
    assert any(t.endswith(".svg") for t in links) and len(links) >= 10
    assert [t for t in links if t and not (ROOT / t).exists()] == []
    for args in (["--help"], []):  # a bare twin prints the same help (on stderr, exit 2: no command given)
        said = " ".join((r := twin_in_process(*args)).stdout.split() + r.stderr.split())
        assert "Documentation: docs/index.md" in said and "mkdocs serve" in said, args
    assert (ROOT / "docs" / "index.md").is_file()


def test_the_exit_code_table_lists_every_code_the_commands_use():
    """docs/reference/cli.md's table has a row for each exit code twin owns (twin/exits.py, the one owner) and none
    it does not; no module of twin/ writes a code of its own (an ``EXIT_... = N``, or typer.Exit, sys.exit or
    SystemExit with a number other than 0): a new code is added there and documented, or this fails."""
    from twin import exits

    owned = {v for k, v in vars(exits).items() if k.isupper()}
    for path in (ROOT / "twin").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.findall(r"\bEXIT_[A-Z_]+ = (\d+)\b", text), f"{path.name} owns an exit code: import it from twin.exits"
        assert not {int(c) for c in re.findall(r"(?:typer\.Exit|sys\.exit|SystemExit)\((?:code=)?(\d+)\)", text)} - {0}, path.name
        if path.parent.name == "cli" or path.name == "output.py":
            assert not re.search(r"^\s+return [1-4]$", text, flags=re.M), f"{path.name} returns an exit code as a number"
    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    table = page.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = {int(c) for c in re.findall(r"^\| `(\d+)` \|", table, re.M)}
    assert owned == documented == {0, 1, 2, 3, 4, 130}, (sorted(owned), sorted(documented))


def test_every_repository_file_a_page_names_exists():
    """A page that names a test, an example, a benchmark or a schema (`tests/test_planes.py`,
    `scenarios/lab-twins.yaml`) names a file that exists: a renamed one cannot leave a stale pointer."""
    named = r"`((?:tests|sites|scenarios|sweeps|bench|schemas|templates)/[A-Za-z0-9_./-]+\.(?:py|yaml|md|json|csv|j2))`"
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = {(str(p.relative_to(ROOT)), f) for p in pages for f in re.findall(named, p.read_text(encoding="utf-8"))}
    assert len(found) >= 50 and sorted((p, f) for p, f in found if not (ROOT / f).is_file()) == []


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    """A reader finds every page from the navigation: the strict build lets a page outside the nav through
    (it is built and searchable), this does not; and no nav line names a page that is not there."""
    def pages(node) -> list[str]:
        if isinstance(node, str):
            return [node]
        items = node.values() if isinstance(node, dict) else node
        return [p for item in items for p in pages(item)]

    nav = pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    on_disk = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts}
    assert len(nav) == len(set(nav)) and len(nav) >= 40
    assert sorted(on_disk - set(nav)) == [] and sorted(set(nav) - on_disk) == []
