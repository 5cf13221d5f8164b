"""Read NetBox's bulk-import forms and choice sets from its source, as data (run by NetBox's own Python).

NetBox 4.7's source uses Python 3.12 syntax, so the tests run this file with the interpreter of NetBox's
environment: ``python netbox_forms.py SITE_PACKAGES`` prints JSON

    {"forms": {"dcim.DeviceImportForm": {"fields": [...], "choices": {"status": "DeviceStatusChoices"}}, ...},
     "choices": {"DeviceStatusChoices": ["active", "planned", ...], ...}}

``fields`` are the form's ``Meta.fields`` plus the fields it declares; ``choices`` maps a declared field
to the ChoiceSet it takes (``choices=...``); a ChoiceSet's values are its upper-case constants.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path


def forms(path: Path) -> dict[str, dict]:
    out = {}
    for cls in ast.parse(path.read_text()).body:
        if not isinstance(cls, ast.ClassDef):
            continue
        fields, choices = set(), {}
        for st in cls.body:
            if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name):
                fields.add(st.targets[0].id)
                if isinstance(st.value, ast.Call):
                    for kw in st.value.keywords:
                        if kw.arg == "choices" and isinstance(kw.value, ast.Name):
                            choices[st.targets[0].id] = kw.value.id
            if isinstance(st, ast.ClassDef) and st.name == "Meta":
                for m in st.body:
                    if (isinstance(m, ast.Assign) and isinstance(m.targets[0], ast.Name) and m.targets[0].id == "fields"
                            and isinstance(m.value, (ast.Tuple, ast.List))):
                        fields |= {e.value for e in m.value.elts if isinstance(e, ast.Constant)}
        out[cls.name] = {"fields": sorted(fields), "choices": choices}
    return out


def choice_sets(path: Path) -> dict[str, list[str]]:
    out = {}
    for cls in ast.parse(path.read_text()).body:
        if isinstance(cls, ast.ClassDef):
            out[cls.name] = sorted({
                str(st.value.value) for st in cls.body
                if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name) and st.targets[0].id.isupper()
                and st.targets[0].id != "CHOICES" and isinstance(st.value, ast.Constant)
            })
    return out


def main(site_packages: str) -> None:
    root = Path(site_packages)
    data = {"forms": {}, "choices": {}}
    for app in ("dcim", "extras"):
        for name, spec in forms(root / app / "forms" / "bulk_import.py").items():
            data["forms"][f"{app}.{name}"] = spec
        data["choices"].update(choice_sets(root / app / "choices.py"))
    json.dump(data, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1])
