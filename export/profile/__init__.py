"""``zoo profile``: the exported C of a model on each core people ship on, under QEMU.

    targets     the cores (Cortex-M0+, M3, M4, M7, M33, M55 without Helium, RV32IMC): compiler
                flags, the QEMU user-mode command
    boards      boards.yaml: core, clock, flash, RAM of the boards the zoo knows (--board)
    counting    the instruction-count protocol (QEMU's insncount plugin, counts of N and 2N
                calls, a fixed path so that a count reproduces to the instruction)
    build       the harness (harness/: C templates and a tiny runtime per architecture) built
                with the export's C; flash, RAM and the deepest stack chain of a firmware
    source      a tag name, a run, an export or a .keras file made into a C export
    engine      one export on each target: counts, firmware figures, bit-exactness against the
                host build of the same C

Example:

```python
from zoo.export.profile import profile
result = profile("sirnn.har2", ["cortex-m0plus", "cortex-m4", "rv32imc"])
result["targets"]["cortex-m4"]["instructions_per_step"]
```
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from zoo.export.profile.source import ProfileError, c_export_of
from zoo.export.profile.targets import TargetError, targets_named

__all__ = ["ProfileError", "TargetError", "profile"]


def profile(source, targets=(), *, calibration=None, labels=None,
            progress=lambda line: None) -> dict:
    """The figures of ``source`` (a tag name, a C / int8 step export, a tag or run folder, a
    ``.keras`` file with ``calibration``) on each of ``targets`` (all when empty):
    ``{"targets": {name: {"instructions_per_step", "instructions_per_window",
    "instructions_per_second", "flash_bytes", "ram_bytes", "bit_exact", ...}}, ...}``.
    `ProfileError` / `TargetError` (one line) for what cannot be profiled; the missing tools
    are named with their Debian packages."""
    from zoo.export.profile.engine import missing_tools, profile_export

    chosen = targets_named(list(targets))
    missing = missing_tools(chosen)
    if missing:
        raise ProfileError(missing)
    with tempfile.TemporaryDirectory(prefix="zoo-profile-") as tmp:
        progress("making the C export" if not Path(str(source)).is_dir() else "reading the export")
        c_dir = c_export_of(str(source), Path(tmp), calibration, labels)
        result = profile_export(c_dir, chosen, Path(tmp) / "work", progress)
    result["source"] = str(source)
    return result
