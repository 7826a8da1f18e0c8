"""`measure_c_cost`: the measured Cortex-M4 cost of a C export (``zoo export --form c``), from
the installed package: the protocol of ``tools/cortexm/measurement.py`` (which is a script
folder, not importable from an install), for ``cortex-m4`` only.

* instructions per step: the export built with ``arm-none-eabi-gcc -O2`` and the driver
  ``cortex_m4_driver/c_main.c``, run under ``qemu-arm`` with the ``insncount`` plugin; per call
  = (count(2N) - count(N)) / N, so start-up cancels, and the driver's own loop is subtracted;
* head instructions: the same for ``zoo_predict``;
* flash: the smallest program running the model once (-Os) minus an empty one;
* RAM: that program's data + bss minus the empty one's, plus the deepest stack of
  ``zoo_push_q`` / ``zoo_step_run`` (``-fstack-usage``).

This is the stand-in until ``zoo profile`` (multi-target QEMU counts) lands: callers use only
``measure_c_cost(c_dir, target)``, which can then be swapped for it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

DRIVER = Path(__file__).resolve().parent / "cortex_m4_driver"
CPU = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]
TARGETS = ("cortex-m4",)
TOOLS = ("arm-none-eabi-gcc", "arm-none-eabi-g++", "arm-none-eabi-size", "qemu-arm", "gcc")
_COUNT = re.compile(r"insns: (\d+)")


class CostMeasurementError(RuntimeError):
    """The toolchain, QEMU or the driver did not give what the protocol needs."""


def missing_tools() -> list[str]:
    """The tools the measurement needs that are not on PATH."""
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def _run(cmd, **kw) -> str:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if done.returncode:
        raise CostMeasurementError(f"{' '.join(map(str, cmd))}: exit {done.returncode}: "
                                   f"{(done.stderr or done.stdout)[-600:]}")
    return done.stdout + done.stderr


def _build(c_dir: Path, work: Path) -> dict[str, Path]:
    """The plugin, the -O2 driver program and the -Os size programs, built in ``work``."""
    gcc, gxx = "arm-none-eabi-gcc", "arm-none-eabi-g++"
    plugin = work / "libinsncount.so"
    _run(["gcc", "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-o", plugin,
          DRIVER / "insncount.c"])
    _run([gxx, *CPU, "-O2", "-fno-rtti", "-fno-exceptions", "-c", DRIVER / "syscalls.cc",
          "-o", work / "syscalls.o"])
    link = [gxx, *CPU, "-nostartfiles", "-Wl,--gc-sections"]
    libs = ["-lc", "-lgcc", "-lnosys"]
    fast = [*CPU, "-std=c99", "-O2", "-ffunction-sections", "-fdata-sections",
            "-DZOO_USE_ARM_DSP", f"-I{c_dir}"]
    _run([gcc, *fast, "-c", DRIVER / "c_main.c", "-o", work / "c_main.o"])
    _run([gcc, *fast, "-c", c_dir / "zoo_model.c", "-o", work / "zoo_model.o"])
    _run([*link, work / "c_main.o", work / "zoo_model.o", work / "syscalls.o", *libs,
          "-o", work / "app.elf"])
    small = [*CPU, "-Os", "-ffunction-sections", "-fdata-sections"]
    _run([gcc, *small, "-c", DRIVER / "empty.c", "-o", work / "empty.o"])
    _run([*link, work / "empty.o", work / "syscalls.o", *libs, "-o", work / "empty.elf"])
    _run([gcc, *small, "-std=c99", "-DZOO_USE_ARM_DSP", f"-I{c_dir}", "-fstack-usage", "-c",
          c_dir / "zoo_model.c", "-o", work / "min_model.o"], cwd=work)
    _run([gcc, *small, "-std=c99", f"-I{c_dir}", "-c", DRIVER / "min_c.c", "-o",
          work / "min_c.o"])
    _run([*link, work / "min_c.o", work / "min_model.o", work / "syscalls.o", *libs,
          "-o", work / "min.elf"])
    return {"plugin": plugin, "app": work / "app.elf", "empty": work / "empty.elf",
            "min": work / "min.elf", "stack": work / "min_model.su"}


def _count(plugin: Path, elf: Path, part: str, n: int) -> int:
    """Instructions the whole program executes running PART n times."""
    out = _run(["qemu-arm", "-cpu", "cortex-a15", "-plugin", plugin, "-d", "plugin", elf,
                "m", part, n], timeout=600)
    found = _COUNT.search(out)
    if f"done m {part} n={n}" not in out or not found:
        raise CostMeasurementError(f"the driver did not finish `{part} {n}` or the plugin "
                                   f"printed no count: {out[-300:]!r}")
    return int(found.group(1))


def _per_call(plugin: Path, elf: Path, part: str, n: int = 100) -> float:
    return (_count(plugin, elf, part, 2 * n) - _count(plugin, elf, part, n)) / n


def _size(elf: Path) -> tuple[int, int, int]:
    """(text, data, bss) from ``arm-none-eabi-size``."""
    line = [ln for ln in _run(["arm-none-eabi-size", elf]).splitlines() if ln.strip()][1]
    text, data, bss = (int(v) for v in line.split()[:3])
    return text, data, bss


def _stack(su_file: Path) -> dict[str, int]:
    out = {}
    for line in su_file.read_text().splitlines():
        if line.strip():
            where, size = line.split("\t")[:2]
            out[where.split(":")[-1]] = int(size)
    return out


def measure_c_cost(c_dir, target: str = "cortex-m4", steps_per_window: int | None = None) -> dict:
    """The measured cost of the C export in ``c_dir`` on ``target`` (module doc):
    ``instructions_per_step``, ``head_instructions``, ``instructions_per_window`` (with
    ``steps_per_window``), ``flash_bytes``, ``ram_bytes``. CostMeasurementError when a tool is
    missing or a step fails; ValueError for a target other than cortex-m4."""
    if target not in TARGETS:
        raise ValueError(f"target {target!r}: measured here for {', '.join(TARGETS)} only "
                         "(zoo profile will measure the others)")
    missing = missing_tools()
    if missing:
        raise CostMeasurementError(f"measuring needs {', '.join(missing)} (apt: "
                                   "gcc-arm-none-eabi qemu-user gcc)")
    c_dir = Path(c_dir).resolve()
    if not (c_dir / "zoo_model.c").is_file():
        raise ValueError(f"{c_dir}: no zoo_model.c; give a `zoo export --form c` folder")
    with tempfile.TemporaryDirectory() as tmp:
        built = _build(c_dir, Path(tmp))
        step = _per_call(built["plugin"], built["app"], "step")
        loop = _per_call(built["plugin"], built["app"], "loop")
        head = _per_call(built["plugin"], built["app"], "head")
        empty, mine = _size(built["empty"]), _size(built["min"])
        stack = _stack(built["stack"])
    cost = {"target": target, "instructions_per_step": round(step - loop, 1),
            "head_instructions": round(head, 1),
            "flash_bytes": mine[0] + mine[1] - empty[0] - empty[1],
            "ram_bytes": mine[2] - empty[2] + stack.get("zoo_push_q", 0)
            + stack.get("zoo_step_run", 0),
            "measured_by": "zoo.export.c_cost (arm-none-eabi-gcc -O2 / -Os, qemu-arm insncount)"}
    if steps_per_window:
        cost["instructions_per_window"] = round(steps_per_window * cost["instructions_per_step"]
                                                + cost["head_instructions"], 1)
    return cost
