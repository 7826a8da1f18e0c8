"""Rewrite `zoo.model_table` from the live registry: ``python -m zoo.write_model_table``.

Its own module (not a ``__main__`` of `zoo.model_table`), so that the stdlib-only table never
imports the registry that imports it.
"""

from __future__ import annotations

import pprint
from pathlib import Path

from zoo import model_table
from zoo.registry import describe_models


def write() -> None:
    """Rewrite ``MODELS`` in ``zoo/model_table.py`` from the live registry."""
    path = Path(model_table.__file__)
    text = path.read_text(encoding="utf-8")
    head = text.split("MODELS: dict")[0]
    body = pprint.pformat(describe_models(), width=100, sort_dicts=True)
    path.write_text(f"{head}MODELS: dict[str, dict[str, str]] = {body}\n", encoding="utf-8")


if __name__ == "__main__":
    write()
