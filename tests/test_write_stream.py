"""A file the build writes as it is rendered (twin/output.py `write_stream`: fabric.graphml, 2 GB on a 2-plane
million-GPU site, never held whole): its digest is the digest of its bytes, the build's folder is what
render() gives, and in a rebuild it is taken from the old output where the bytes are the same (its inode
kept) and written where they differ."""

from __future__ import annotations

import hashlib
from pathlib import Path

from twin.emit import model_export
from twin.output import write_stream

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "sites" / "lab-2zone.yaml"


def test_a_streamed_file_is_its_chunks_and_their_digest(tmp_path):
    chunks = [b"<a>", "é".encode(), b"", b"x" * 100_000]
    digest = write_stream(tmp_path, "deep/er/f.graphml", iter(chunks))
    data = (tmp_path / "deep" / "er" / "f.graphml").read_bytes()
    assert data == b"".join(chunks) and digest == (hashlib.sha256(data).hexdigest(), len(data))


def test_the_graphml_is_streamed_the_same_and_rebuilt_only_when_it_changes(tmp_path, monkeypatch):
    from twin.build import build, render

    out = tmp_path / "lab"
    build(SPEC, out)
    _, files = render(SPEC)
    graphml = out / "model" / "fabric.graphml"
    assert graphml.read_bytes() == files["model/fabric.graphml"] and len(files["model/fabric.graphml"]) > 10_000
    ino = graphml.stat().st_ino

    edited = tmp_path / "lab-2zone.yaml"  # a comment: the same design, so the same graphml, linked from the old output
    edited.write_text(SPEC.read_text() + "# a comment\n")
    build(edited, out)
    assert graphml.stat().st_ino == ino

    real = model_export.iter_graphml  # a graphml that differs: written, and the output holds the new one
    monkeypatch.setattr(model_export, "iter_graphml", lambda m: (*real(m), "<!-- changed -->\n"))
    edited.write_text(SPEC.read_text() + "# another comment\n")
    build(edited, out)
    assert graphml.read_bytes() == files["model/fabric.graphml"] + b"<!-- changed -->\n" and graphml.stat().st_ino != ino
    manifest = (out / "manifest.json").read_text()
    assert hashlib.sha256(graphml.read_bytes()).hexdigest() in manifest


def test_the_netbox_set_is_streamed_file_by_file_as_render_gives_it(tmp_path, monkeypatch):
    """NetBox's tables come one after another (the interfaces' 1.4 GB of CSV on the 2-plane gigawatt site): each
    file is written as its rows are rendered, the README (every table's rows counted) last; the folder holds
    render()'s bytes, whatever the chunk size, and a name is asked for only once the file before it is written."""
    from twin.build import build, render
    from twin.emit import netbox

    monkeypatch.setattr(netbox, "CHUNK", 7)  # lab-2zone's interfaces and cables in many chunks
    out = tmp_path / "lab"
    build(SPEC, out)
    _, files = render(SPEC)
    names = sorted(k for k in files if k.startswith("netbox/"))
    assert len(names) == 11 and "netbox/README.md" in names
    for rel in names:
        assert (out / rel).read_bytes() == files[rel], rel
    assert files["netbox/09-interfaces.csv"].count(b"\n") > 7 * 3  # more rows than three chunks

    seen, written = [], []
    monkeypatch.setattr(netbox, "tables", _recording(netbox.tables, seen, written))
    from twin.compiler.pipeline import compile_design

    _, pairs = netbox.emit_stream(compile_design(SPEC))
    for rel, chunks in pairs:
        assert len(seen) == len(written) + 1 or rel == "netbox/README.md"  # the table before this one was read to the end
        written.append(b"".join(chunks))
    assert len(written) == len(names)


def _recording(real, seen, written):
    def tables(design):
        for t in real(design):
            seen.append(t.stem)
            yield t
    return tables


def test_the_cable_schedule_and_breakouts_are_streamed_as_render_gives_them(tmp_path, monkeypatch):
    """cables.csv and breakouts.csv (the 2-plane gigawatt site: ~3.4M cables, 1.6 GB) are written chunk by chunk,
    the pull sheets whole: the folder holds render()'s bytes with chunks of 7 rows (many chunks, the header once)."""
    from twin import csvfmt
    from twin.build import build, render

    spec = ROOT / "sites" / "gb200-nvl72-superpod.yaml"  # split cages: a breakouts.csv
    monkeypatch.setattr(csvfmt, "CHUNK_ROWS", 7)
    out = tmp_path / "pod"
    build(spec, out)
    _, files = render(spec)
    names = [k for k in files if k.startswith("cabling/")]
    assert {"cabling/cables.csv", "cabling/breakouts.csv"} <= set(names)
    for rel in names:
        assert (out / rel).read_bytes() == files[rel], rel
    for rel in ("cabling/cables.csv", "cabling/breakouts.csv"):
        text = files[rel].decode()
        assert text.count("cable_id") == 1 and text.count("\n") > 3 * 7  # one header, more rows than three chunks
