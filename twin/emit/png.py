"""Writing a matplotlib figure as a PNG whose bytes depend only on what it draws (every twin's plots)."""

from __future__ import annotations

from pathlib import Path


def save_png(fig, path: Path) -> Path:
    """Lay out, write without the software stamp (byte-identical reruns) and close ``fig``."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path
