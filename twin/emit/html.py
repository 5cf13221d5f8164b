"""report.html: the report's Markdown as one self-contained page, with the pictures inlined.

The Markdown the report sections write is a small, regular subset (headings, paragraphs, GitHub
tables with alignment, ``-`` lists, fenced code, ``**bold**``, `` `code` ``, links to the page's own
headings ``[text](#id)``, links to a CSV the build wrote beside it ``[text](report/x.csv)`` and image lines), so a
converter of that subset is all the page needs: no script, no font and no file from anywhere else.
An image line ``![caption](report/x.svg)`` becomes a ``<figure>`` with the SVG's text inlined;
consecutive image lines share one row (the floor plans of several halls side by side). Headings get
stable ids (slugs) and the level-2 and level-3 headings make the table of contents. Printing (to PDF)
drops the sticky contents column, keeps figures and table rows whole and repeats table headers. A table
cell that is exactly FAIL, WARN or PASS (the verdicts, :mod:`twin.emit.verdicts_report`) is coloured.

>>> inline("a **b** `c|d` x \\\\| y <z> [to](#fabric)")
'a <strong>b</strong> <code>c|d</code> x | y &lt;z&gt; <a href="#fabric">to</a>'
"""

from __future__ import annotations

import re
from html import escape

from twin.analysis.verdicts import section_id

CSS = """
:root { --ink: #222; --muted: #666; --rule: #ddd; --accent: #4e79a7; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
.page { display: grid; grid-template-columns: 240px minmax(0, 1fr); max-width: 1400px; margin: 0 auto; }
nav.toc { position: sticky; top: 0; align-self: start; max-height: 100vh; overflow-y: auto; padding: 16px 12px;
  border-right: 1px solid var(--rule); font-size: 13px; }
nav.toc ol { list-style: none; padding-left: 0; margin: 0; }
nav.toc ol ol { padding-left: 14px; }
nav.toc a { color: var(--ink); text-decoration: none; display: block; padding: 2px 0; }
nav.toc a:hover { color: var(--accent); }
main { padding: 8px 28px 40px; min-width: 0; }
h1 { font-size: 24px; margin: 16px 0 8px; }
h2 { font-size: 19px; margin: 28px 0 8px; padding-top: 8px; border-top: 2px solid var(--rule); }
h3 { font-size: 15px; margin: 18px 0 6px; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 13px; display: block; overflow-x: auto; max-width: 100%; }
th, td { border: 1px solid var(--rule); padding: 3px 8px; vertical-align: top; }
th { background: #f3f5f8; text-align: left; }
tr:nth-child(even) td { background: #fafafa; }
td.r, th.r { text-align: right; font-variant-numeric: tabular-nums; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; background: #f3f3f3; padding: 0 3px; border-radius: 3px; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
pre code { background: none; padding: 0; }
pre .add { color: #1a7f37; background: #e6ffec; } pre .del { color: #b3261e; background: #ffebe9; } pre .hunk { color: #6f42c1; }
.figures { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
figure { margin: 10px 0 16px; max-width: 100%; }
.gallery figure { flex: 1 1 460px; max-width: 600px; min-width: 0; }
figure svg { display: block; max-width: 100%; height: auto; border: 1px solid var(--rule); }
figcaption { color: var(--muted); font-size: 12px; margin-top: 4px; max-width: 640px; }
.warning { color: #8a5a00; }
td.v-fail, td.v-warn, td.v-pass { font-weight: 600; font-size: 12px; letter-spacing: 0.03em; }
td.v-fail { color: #fff; background: #b3261e !important; } td.v-warn { color: #4a3300; background: #f6c343 !important; }
td.v-pass { color: #1a7f37; }
@media print {
  @page { size: A4; margin: 14mm 12mm; }
  body { font-size: 10.5pt; }
  .page { display: block; max-width: none; }
  nav.toc { position: static; max-height: none; overflow: visible; border: 0; padding: 0; break-after: page; }
  nav.toc a { color: var(--ink); }
  main { padding: 0; }
  h2, h3 { break-after: avoid; }
  figure, tr, pre { break-inside: avoid; }
  thead { display: table-header-group; }
  table { display: table; overflow: visible; font-size: 9pt; }
  figure svg { border: 0; }
  a { color: inherit; text-decoration: none; }
}
"""

IMAGE = re.compile(r"^!\[(?P<cap>[^\]]*)\]\((?P<src>[^)\s]+)\)\s*$")
HEADING = re.compile(r"^(#{1,4})\s+(.*)$")
LINK = re.compile(r"\[([^\]]+)\]\(#([a-z0-9-]+)\)")  # a link to a heading of the page
FILE_LINK = re.compile(r"\[([^\]]+)\]\((report/[a-z0-9][a-z0-9-]*\.csv)\)")  # a link to a table the build wrote beside the page
VERDICT = {"FAIL": "v-fail", "WARN": "v-warn", "PASS": "v-pass"}  # a verdict cell (twin.emit.verdicts_report)


def slug(text: str, seen: dict[str, int]) -> str:
    """A stable id for a heading, unique on the page.

    >>> seen = {}; slug("Power and cooling budget", seen), slug("Power and cooling budget", seen)
    ('power-and-cooling-budget', 'power-and-cooling-budget-2')
    """
    s = section_id(text)
    seen[s] = seen.get(s, 0) + 1
    return s if seen[s] == 1 else f"{s}-{seen[s]}"


def inline(text: str) -> str:
    """Markdown inline spans of the subset: code, bold, escaped pipes and stars; everything else escaped."""
    out = []
    for k, part in enumerate(re.split(r"(`[^`]*`)", text)):
        if k % 2:
            out.append(f"<code>{escape(part[1:-1], quote=False)}</code>")
            continue
        part = escape(part.replace("\\|", "|").replace("\\*", "\x00"), quote=False)
        part = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", part)
        part = LINK.sub(r'<a href="#\2">\1</a>', part)
        part = FILE_LINK.sub(r'<a href="\2">\1</a>', part)
        out.append(part.replace("\x00", "*"))
    return "".join(out)


def cells(line: str) -> list[str]:
    """The cells of a Markdown table row (a ``\\|`` inside a cell is not a separator)."""
    body = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def table_html(lines: list[str]) -> str:
    head, rule, body = cells(lines[0]), cells(lines[1]), [cells(x) for x in lines[2:]]
    align = ["r" if r.strip().endswith(":") and not r.strip().startswith(":") else "" for r in rule]

    def cls(i: int) -> str:
        return ' class="r"' if i < len(align) and align[i] else ""

    out = ["<table>"]
    if any(head):  # a key-value table (empty header cells) has no header row
        out.append("<thead><tr>" + "".join(f"<th{cls(i)}>{inline(h)}</th>" for i, h in enumerate(head)) + "</tr></thead>")
    out.append("<tbody>")
    for row in body:
        out.append("<tr>" + "".join(f'<td class="{VERDICT[c]}">{c}</td>' if c in VERDICT else f"<td{cls(i)}>{inline(c)}</td>"
                                    for i, c in enumerate(row)) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def body_html(markdown: str, pictures: dict[str, bytes]) -> tuple[str, list[tuple[int, str, str]]]:
    """The page body and its headings (level, id, text) from the report's Markdown; ``pictures`` maps
    an image line's source path to the SVG inlined for it."""
    lines = markdown.splitlines()
    out: list[str] = []
    heads: list[tuple[int, str, str]] = []
    seen: dict[str, int] = {}
    para: list[str] = []
    i = 0

    def flush() -> None:
        if para:
            out.append(f"<p>{inline(' '.join(para))}</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            flush()
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith("```"):
                j += 1
            out.append(code_html(lines[i + 1:j], line.strip()[3:].strip()))
            i = j + 1
            continue
        if m := HEADING.match(line):
            flush()
            level, text = len(m.group(1)), m.group(2).strip()
            hid = slug(text, seen)
            heads.append((level, hid, inline(text)))
            out.append(f'<h{level} id="{hid}">{inline(text)}</h{level}>')
        elif IMAGE.match(line):
            flush()
            figs = []
            while i < len(lines):
                m = IMAGE.match(lines[i])
                if m:
                    figs.append(figure_html(m.group("src"), m.group("cap"), pictures, seen))
                elif lines[i].strip() or i + 1 >= len(lines) or not IMAGE.match(lines[i + 1]):
                    break
                i += 1
            out.append(f'<div class="figures{" gallery" if len(figs) > 1 else ""}">\n' + "\n".join(figs) + "\n</div>")
            continue
        elif line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|\s*$", lines[i + 1]):
            flush()
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out.append(table_html(lines[i:j]))
            i = j
            continue
        elif line.startswith("- "):
            flush()
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>\n" + "\n".join(items) + "\n</ul>")
            continue
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    return "\n".join(out), heads


def code_html(lines: list[str], lang: str) -> str:
    """A fenced block; a ``diff`` block marks added and removed lines (green, red).

    >>> code_html(["+a", "-b<", " c"], "diff")
    '<pre><code><span class="add">+a</span>\\n<span class="del">-b&lt;</span>\\n c</code></pre>'
    """
    if lang != "diff":
        return "<pre><code>" + escape("\n".join(lines), quote=False) + "</code></pre>"
    out = []
    for ln in lines:
        e = escape(ln, quote=False)
        if ln.startswith(("+++", "---", "@@")):
            out.append(f'<span class="hunk">{e}</span>')
        elif ln.startswith("+"):
            out.append(f'<span class="add">{e}</span>')
        elif ln.startswith("-"):
            out.append(f'<span class="del">{e}</span>')
        else:
            out.append(e)
    return "<pre><code>" + "\n".join(out) + "</code></pre>"


def figure_html(src: str, caption: str, pictures: dict[str, bytes], seen: dict[str, int]) -> str:
    svg = pictures.get(src)
    fid = slug("fig-" + src.rsplit("/", 1)[-1].rsplit(".", 1)[0], seen)
    if svg is None:  # never in a build (every image line names a picture it wrote); kept visible if it happens
        return f'<figure id="{fid}"><p>missing picture {escape(src)}</p><figcaption>{inline(caption)}</figcaption></figure>'
    return f'<figure id="{fid}">\n{svg.decode("utf-8").strip()}\n<figcaption>{inline(caption)}</figcaption>\n</figure>'


def toc_html(heads: list[tuple[int, str, str]]) -> str:
    """Level-2 headings as the contents, each with its level-3 headings nested."""
    tree: list[tuple[str, str, list[tuple[str, str]]]] = []
    for level, hid, text in heads:
        if level == 2:
            tree.append((hid, text, []))
        elif level == 3 and tree:
            tree[-1][2].append((hid, text))
    out = ['<nav class="toc" aria-label="Contents"><strong>Contents</strong>', "<ol>"]
    for hid, text, subs in tree:
        inner = "".join(f'<li><a href="#{h}">{t}</a></li>' for h, t in subs)
        out.append(f'<li><a href="#{hid}">{text}</a>' + (f"<ol>{inner}</ol>" if inner else "") + "</li>")
    out.append("</ol></nav>")
    return "\n".join(out)


def page(title: str, markdown: str, pictures: dict[str, bytes]) -> bytes:
    """The whole page: contents column and the report, self-contained."""
    body, heads = body_html(markdown, pictures)
    html = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<div class=\"page\">\n"
            f"{toc_html(heads)}\n<main>\n{body}\n</main>\n</div>\n</body>\n</html>\n")
    return html.encode("utf-8")
