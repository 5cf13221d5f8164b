"""The NetBox import set without a NetBox: every reference resolves to an earlier file, racks hold their
devices without overlap, counts follow from the spec, names of two sites never collide, and the columns
and choice values are those of NetBox's own import forms (read from the installed NetBox package)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from conftest import compiled, tiered

from twin.emit import netbox as netbox_emit
from twin.emit.netbox_objects import NAME_MAX, Table, device_name, import_set


def tables(name: str) -> dict[str, Table]:
    return {t.model: t for t in import_set(compiled(name))}


@pytest.mark.parametrize("site", ["lab-2zone", "lab-ib"])
def test_every_reference_resolves_in_import_order(site):
    t = tables(site)
    order = [x.model for x in import_set(compiled(site))]
    assert order == ["extras.tag", "dcim.site", "dcim.location", "dcim.rack", "dcim.manufacturer", "dcim.devicetype",
                     "dcim.devicerole", "dcim.device", "dcim.interface", "dcim.cable"]
    names = {m: {r["name"] for r in t[m].records()} for m in t if "name" in t[m].columns and m != "dcim.interface"}
    for r in t["dcim.location"].records():
        assert r["site"] == site and (r["parent"] == "" or r["parent"] in names["dcim.location"])
    halls_first = [r["parent"] == "" for r in t["dcim.location"].records()]
    assert halls_first == sorted(halls_first, reverse=True)  # a parent comes before its rows
    racks = {r["name"]: r for r in t["dcim.rack"].records()}
    for r in racks.values():
        assert r["location"] in names["dcim.location"] and r["site"] == site
    types = {(r["manufacturer"], r["model"]): int(r["u_height"]) for r in t["dcim.devicetype"].records()}
    devices = {r["name"]: r for r in t["dcim.device"].records()}
    occupied: dict[str, Counter] = {}
    for d in devices.values():
        assert d["role"] in names["dcim.devicerole"] and d["manufacturer"] in names["dcim.manufacturer"]
        rack = racks[d["rack"]]
        assert d["location"] == rack["location"] and d["site"] == site
        h, u = types[(d["manufacturer"], d["device_type"])], int(d["position"])
        assert 1 <= u and u + h - 1 <= int(rack["u_height"]), d
        occupied.setdefault(d["rack"], Counter()).update(range(u, u + h))
    assert all(n == 1 for c in occupied.values() for n in c.values()), "two devices share a rack unit"
    ifaces = Counter((r["device"], r["name"]) for r in t["dcim.interface"].records())
    assert all(n == 1 for n in ifaces.values()) and all(dev in devices for dev, _ in ifaces)
    ends = Counter()
    for c in t["dcim.cable"].records():
        for side in ("a", "b"):
            end = (c[f"side_{side}_device"], c[f"side_{side}_name"])
            assert end in ifaces, end
            ends[end] += 1
    assert max(ends.values()) == 1, "an interface ends two cables"


def test_counts_follow_from_the_spec():
    """lab-2zone: 2 zones x 4 racks of 2 servers (8 NICs each) and 1 RTSW, 4 CTSW per zone, 2 ATSW,
    every switch a 64-port Minipack2; cables: 128 NIC, 8 x 16 RTSW uplinks, CTSW-ATSW at 2:1."""
    d = compiled("lab-2zone")
    t = tables("lab-2zone")
    servers, rtsw, ctsw, atsw = 2 * 4 * 2, 2 * 4, 2 * 4, 2
    assert len(t["dcim.device"].rows) == servers + rtsw + ctsw + atsw == 34
    assert len(t["dcim.interface"].rows) == (rtsw + ctsw + atsw) * 64 + servers * 8 == 1280
    ctsw_down = 4 * 16 * 2 // ctsw  # each CTSW takes 4 links from each of its zone's 4 racks
    assert len(t["dcim.cable"].rows) == servers * 8 + rtsw * 16 + ctsw * ctsw_down // 2 == len(d.cabling) == 320
    assert len(t["dcim.rack"].rows) == len(d.placement.racks) == 11
    nic_rows = [r for r in t["dcim.interface"].records() if r["name"].startswith("nic")]
    assert {(r["type"], r["speed"]) for r in nic_rows} == {("400gbase-x-qsfpdd", "400000000")}
    ib = tables("lab-ib")
    assert {r["type"] for r in ib["dcim.interface"].records()} == {"infiniband-ndr"}


def test_two_sites_do_not_collide():
    """lab-2zone and a second AI-zone site share twin names (z1-ctsw-01 ... z1-ctsw-04); NetBox finds
    devices by name alone in interface and cable imports, so the import sets must not share one."""
    a, b = compiled("lab-2zone"), compiled("lab-powercap")
    shared_twin_names = set(a.fabric.graph.nodes) & set(b.fabric.graph.nodes)
    assert "z1-ctsw-01" in shared_twin_names
    for x, y in (("lab-2zone", "lab-powercap"), ("lab-2zone", "lab-ib")):
        dx = {r["name"] for r in tables(x)["dcim.device"].records()}
        dy = {r["name"] for r in tables(y)["dcim.device"].records()}
        assert dx and dy and not dx & dy
        assert not {r["name"] for r in tables(x)["dcim.site"].records()} & {r["name"] for r in tables(y)["dcim.site"].records()}
    assert device_name("lab-2zone", "atsw-01") in {r["name"] for r in tables("lab-2zone")["dcim.device"].records()}


@pytest.mark.parametrize("site", tiered(["lab-2zone", "lab-ib", "meta-24k-roce"]))
def test_device_names_fit_netbox(site):
    assert max(len(r["name"]) for r in tables(site)["dcim.device"].records()) <= NAME_MAX


def test_files_are_deterministic_and_parse():
    d = compiled("lab-ib")
    files = netbox_emit.emit(d)
    assert files == netbox_emit.emit(d)
    assert sorted(files) == [f"netbox/{t.stem}.csv" for t in import_set(d)] + ["netbox/README.md"]
    for t in import_set(d):
        rows = list(csv.reader(io.StringIO(files[f"netbox/{t.stem}.csv"].decode())))
        assert tuple(rows[0]) == t.columns and [tuple(r) for r in rows[1:]] == list(t.rows)
    readme = files["netbox/README.md"].decode()
    assert "10-cables.csv" in readme and "/dcim/cables/import/" in readme


# ------------------------------------------------------------------ against NetBox's own forms
FORMS = {
    "extras.tag": ("extras", "TagImportForm"), "dcim.site": ("dcim", "SiteImportForm"),
    "dcim.location": ("dcim", "LocationImportForm"), "dcim.rack": ("dcim", "RackImportForm"),
    "dcim.manufacturer": ("dcim", "ManufacturerImportForm"), "dcim.devicetype": ("dcim", "DeviceTypeImportForm"),
    "dcim.devicerole": ("dcim", "DeviceRoleImportForm"), "dcim.device": ("dcim", "DeviceImportForm"),
    "dcim.interface": ("dcim", "InterfaceImportForm"), "dcim.cable": ("dcim", "CableImportForm"),
}
# choice columns whose choices come from the model field rather than a field declared on the form
MODEL_CHOICES = {("dcim.devicetype", "airflow"): "DeviceAirflowChoices"}


@pytest.mark.netbox
@pytest.mark.slow
@pytest.mark.parametrize("site", ["lab-2zone", "lab-ib"])
def test_columns_and_choices_are_netboxs(netbox_package, site):
    """Every column is a field of that object's import form in the installed NetBox, and every value of a
    choice column is one of that form's choices (the same source files NetBox validates an import with)."""
    py = netbox_package.parents[2] / "bin" / "python"  # NetBox's own interpreter (its source is Python 3.12)
    js = json.loads(subprocess.run([str(py), str(Path(__file__).with_name("netbox_forms.py")), str(netbox_package)],
                                   capture_output=True, text=True, check=True, timeout=120).stdout)
    values = {k: set(v) for k, v in js["choices"].items()}
    checked = 0
    for t in import_set(compiled(site)):
        app, form = FORMS[t.model]
        spec = js["forms"][f"{app}.{form}"]
        unknown = set(t.columns) - set(spec["fields"])
        assert not unknown, f"{t.model}: {form} has no column {sorted(unknown)}"
        for col in t.columns:
            cls = spec["choices"].get(col) or MODEL_CHOICES.get((t.model, col))
            if cls is None or cls not in values:
                continue
            bad = {r[col] for r in t.records()} - values[cls]
            assert not bad, f"{t.model}.{col}: {sorted(bad)} not in {cls}"
            checked += 1
    assert checked >= 10  # status everywhere, form_factor, width, airflow, face, interface and cable types, units


def test_long_names_are_found_in_name_and_device_columns():
    from twin.emit.netbox_objects import long_names

    long = "s" * (NAME_MAX + 1)
    devices = Table("08-devices", "dcim.device", "/dcim/devices/import/", ("name", "role"), ((long, "rtsw"), ("ok", long)))
    ifaces = Table("09-interfaces", "dcim.interface", "/dcim/interfaces/import/", ("device", "name"), ((long, "eth0"), (long, "eth1")))
    assert long_names([devices, ifaces]) == [
        f"dcim.device {long!r} has {NAME_MAX + 1} characters (NetBox allows {NAME_MAX})",  # the role column is not a name
        f"dcim.interface {long!r} has {NAME_MAX + 1} characters (NetBox allows {NAME_MAX})",  # once, though on two rows
    ]
    assert long_names([Table("08-devices", "dcim.device", "/x/", ("name",), (("s" * NAME_MAX,),))]) == []
