"""design.json: the design document (:func:`twin.compiler.document.document`) as an artifact."""

from __future__ import annotations

from twin.compiler.design import Design
from twin.compiler.document import document, dumps


def emit(design: Design) -> dict[str, bytes]:
    return {"design.json": dumps(document(design))}
