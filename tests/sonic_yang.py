"""A config_db.json validator built on SONiC's own YANG models, loaded with libyang.

SONiC validates configuration by mapping each config_db table onto the YANG module that defines it
and parsing the result with libyang (``sonic_yang``); this does the same, independently:

- table ``T`` is the container ``T`` of the module that defines it; a row goes to the list of ``T``
  whose key has as many leaves as the row key has ``|``-separated parts (``Ethernet0|3``), or to the
  container of that name (``DEVICE_METADATA|localhost``); a map table (``DSCP_TO_TC_MAP|AZURE``) fills
  the inner list, one entry per field;
- config_db writes every value as a string, JSON-IETF wants numbers and booleans typed: values are
  converted by the leaf's YANG type (through leafrefs and unions); a value that does not convert is
  passed on unchanged, so libyang reports it;
- unknown tables and row keys that fit no list are reported here, everything else (unknown fields,
  missing mandatory leaves, patterns, ranges, leafrefs, ``must``/``when``) by libyang in strict mode.

libyang stops at its first error, so :meth:`SonicYang.errors` returns this module's findings and then
at most one of libyang's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

# Without the bindings, importing this module skips (the SONiC conformance tests, and this module's doctest collection).
libyang = pytest.importorskip("libyang", reason="libyang is not installed (Debian libyang2-dev, then PyPI libyang==2.7.1, a test extra: bash .ci/run installs both)")

libyang.configure_logging(True)  # libyang then records the schema path of each error

SMALL_INTS = {libyang.Type.INT8, libyang.Type.INT16, libyang.Type.INT32,
              libyang.Type.UINT8, libyang.Type.UINT16, libyang.Type.UINT32}
INTEGER = re.compile(r"-?\d+")


def kind(t: libyang.Type) -> str:
    """How a config_db string becomes JSON-IETF for a leaf of this type: 'int', 'bool', 'int|str', 'str'."""
    base = t.base()
    if base == libyang.Type.LEAFREF:
        return kind(t.leafref_type())
    if base in SMALL_INTS:
        return "int"
    if base == libyang.Type.BOOL:
        return "bool"
    if base == libyang.Type.UNION:
        return "int|str" if any(kind(u) in ("int", "int|str") for u in t.union_types()) else "str"
    return "str"  # strings, enumerations, 64-bit numbers and decimal64 are JSON strings


def convert(k: str, v):
    if not isinstance(v, str):
        return v
    if k == "int" or (k == "int|str" and INTEGER.fullmatch(v)):
        return int(v) if INTEGER.fullmatch(v) else v
    if k == "bool":
        return {"true": True, "false": False}.get(v, v)
    return v


class Table:
    """One config_db table: its module, its lists by key length, its containers (plain Python, built once)."""

    def __init__(self, module: str, top: str, node):
        self.prefix = f"{module}:{top}"
        self.lists: dict[int, tuple] = {}
        self.containers: dict[str, dict[str, tuple[bool, str]]] = {}
        for child in node.children():
            if not isinstance(child, (libyang.SContainer, libyang.SList)):
                continue  # a leaf straight under a table has no config_db row to come from
            fields = {c.name(): (isinstance(c, libyang.SLeafList), kind(c.type()))
                      for c in child.children() if isinstance(c, (libyang.SLeaf, libyang.SLeafList))}
            if isinstance(child, libyang.SContainer):
                self.containers[child.name()] = fields
                continue
            keys = [(k.name(), kind(k.type())) for k in child.keys()]
            nested = None  # a map table: one inner list of (key, value) pairs, e.g. DSCP_TO_TC_MAP
            for inner in (c for c in child.children() if isinstance(c, libyang.SList)):
                ikeys = list(inner.keys())
                ivals = [c for c in inner.children() if c.name() not in {k.name() for k in ikeys}]
                if len(ikeys) == 1 and len(ivals) == 1:
                    ikey, ival = ikeys[0], ivals[0]
                    nested = (inner.name(), ikey.name(), kind(ikey.type()), ival.name(), kind(ival.type()))
            self.lists.setdefault(len(keys), (child.name(), keys, fields, nested))


def leaves(fields: dict[str, tuple[bool, str]], row: dict) -> dict:
    out = {}
    for name, value in row.items():
        is_list, k = fields.get(name, (False, "str"))  # unknown fields go through: libyang names them
        if is_list:
            items = value if isinstance(value, list) else value.split(",")
            out[name] = [convert(k, x) for x in items]
        else:
            out[name] = convert(k, value)
    return out


class SonicYang:
    """Every module of a models directory loaded into one libyang context, tables indexed once."""

    def __init__(self, models: Path):
        self.ctx = libyang.Context(str(models))
        for path in sorted(models.glob("*.yang")):
            self.ctx.load_module(path.stem)
        self.tables: dict[str, Table] = {}
        for module in self.ctx:
            if not module.implemented():
                continue  # imported for its types only (ietf-inet-types, ...): no data nodes
            for top in module.children():
                for table in top.children():
                    if isinstance(table, libyang.SContainer):
                        self.tables[table.name()] = Table(module.name(), top.name(), table)

    def to_ietf(self, db: dict) -> tuple[dict, list[str]]:
        """config_db -> JSON-IETF data tree, and what could not be mapped at all."""
        doc: dict = {}
        problems = []
        for name, rows in db.items():
            table = self.tables.get(name)
            if table is None:
                problems.append(f"{name}: no SONiC YANG model defines this table")
                continue
            body = doc.setdefault(table.prefix, {}).setdefault(name, {})
            for key, row in rows.items():
                if key in table.containers:
                    body[key] = leaves(table.containers[key], row)
                    continue
                parts = key.split("|")
                if len(parts) not in table.lists:
                    problems.append(f"{name}|{key}: the key fits no list of {name}")
                    continue
                list_name, keys, fields, nested = table.lists[len(parts)]
                entry = {k: convert(kk, p) for (k, kk), p in zip(keys, parts)}
                if nested is not None:
                    inner, ikey, ikind, ival, vkind = nested
                    entry[inner] = [{ikey: convert(ikind, a), ival: convert(vkind, b)} for a, b in row.items()]
                else:
                    entry.update(leaves(fields, row))
                body.setdefault(list_name, []).append(entry)
        return doc, problems

    def errors(self, db: dict) -> list[str]:
        """Everything wrong with one config_db (empty: SONiC's models accept it)."""
        doc, problems = self.to_ietf(db)
        try:
            tree = self.ctx.parse_data_mem(json.dumps(doc), "json", strict=True, validate_present=True)
        except libyang.LibyangError as e:
            return problems + [str(e)]
        if tree is not None:
            tree.free()
        return problems
