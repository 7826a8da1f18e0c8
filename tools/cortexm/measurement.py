"""The Cortex-M measurement scripts' side of `zoo.export.profile` (the one owner of the protocol:
``zoo profile``): its counting (QEMU's ``insncount`` plugin, counts of N and 2N calls, a fixed
path so that a count reproduces to the instruction), the firmware tools' outputs, and what only
these scripts need: any ELF counted (the TFLite Micro drivers ``main.cc``, ``kws_main.c``,
``dscnn_main.cc``, also under qemu-system-arm), and the MACs of a model (`zoo.macs`).

Every driver runs as ``DRIVER MODEL PART N``: it runs PART (a step, a head, the driver's own
loop, ...) N times and prints ``done MODEL PART n=N``; the plugin prints ``insns: COUNT`` at
exit. Per call = (count(2N) - count(N)) / N, so start-up cancels; a step's net figure subtracts
the driver's loop.

    python tools/cortexm/measure.py ...   # and c_cards.py, c_frontier.py, kws_measure.py: the scripts
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from zoo.export.profile import counting
from zoo.export.profile.counting import (MeasurementError, parse_count, per_call_of,  # noqa: F401
                                         per_second, per_window, sh)
from zoo.export.profile.build import parse_size, parse_stack_usage  # noqa: F401
from zoo.export.profile.targets import TARGETS

HERE = Path(__file__).resolve().parent
CPU = " ".join(TARGETS["cortex-m4"].flags)
ARM_USER = TARGETS["cortex-m4"].qemu


def ensure_plugin() -> Path:
    """The instruction-count plugin (`zoo.export.profile.counting.plugin`: built with the
    host's gcc into the cache folder the first time)."""
    return counting.plugin()


def qemu_command(elf, model: str, part: str, n: int, machine: str | None = None) -> list[str]:
    """qemu-system-arm -M MACHINE (a real M-profile CPU model, semihosting arguments) for
    ``machine``; user mode goes through `count`'s fixed path instead."""
    return ["qemu-system-arm", "-M", machine, "-nographic", "-semihosting-config",
            f"enable=on,target=native,arg=app,arg={model},arg={part},arg={n}",
            "-plugin", str(ensure_plugin()), "-d", "plugin", "-kernel", str(elf)]


def count(elf, model: str, part: str, n: int, machine: str | None = None) -> int:
    """Instructions the whole program executes running PART N times: under qemu-arm user mode
    on the fixed path of `zoo.export.profile.counting` (the ELF copied to its own folder as
    ./count.elf, an empty environment), or under qemu-system-arm -M ``machine``."""
    if machine is not None:
        done = subprocess.run(qemu_command(elf, model, part, n, machine), capture_output=True,
                              text=True, timeout=600)
        return parse_count(done.stdout + done.stderr, model, part, n)
    with tempfile.TemporaryDirectory(prefix="zoo-count-") as folder:
        shutil.copy(elf, Path(folder) / counting.PROGRAM_NAME)  # executable, as qemu needs
        return counting.count(Path(folder), ARM_USER, model, part, n)


def per_call(elf, model: str, part: str, n: int, machine: str | None = None) -> float:
    """Instructions per run of PART: (count(2N) - count(N)) / N."""
    return per_call_of(count(elf, model, part, n, machine), count(elf, model, part, 2 * n, machine), n)


def c_firmware(c_dir, name: str, build_dir=None) -> dict:
    """The Cortex-M4 figures of a C-backend export (``zoo export --form c``), measured by
    ``zoo profile`` (`zoo.export.profile.engine`): flash (-Os, the smallest program running it
    once minus an empty one), RAM (data + bss + the deepest stack chain), instructions per step
    (-O2, net of the harness's loop) and per head call, under qemu-arm."""
    from zoo.export.profile.engine import profile_export

    with tempfile.TemporaryDirectory(prefix="zoo-profile-") as work:
        fig = profile_export(Path(c_dir), [TARGETS["cortex-m4"]], Path(work))["targets"]["cortex-m4"]
    if not fig["bit_exact"]:
        raise MeasurementError(f"{c_dir}: the Cortex-M4 build differs from the host build: "
                               f"{fig['mismatch']}")
    return {"cortex_m4_flash_bytes_Os": fig["flash_bytes"], "cortex_m4_ram_bytes": fig["ram_bytes"],
            "cortex_m4_instructions_per_step_O2": fig["instructions_per_step"],
            "cortex_m4_head_instructions_O2": fig.get("head_instructions")}


def toolchain() -> dict:
    """The versions the figures were measured with."""
    return {"cc": sh(["arm-none-eabi-gcc", "--version"]).splitlines()[0],
            "qemu": sh(["qemu-arm", "--version"]).splitlines()[0], "cpu": f"{CPU}, DSP path"}


def keras_figures(source) -> dict:
    """Parameters, MACs per step (`zoo.macs`) and the cell of the Keras model of a run directory
    or a shipped tag's folder."""
    from zoo.layers import recurrent_layers
    from zoo.macs import cell_macs_per_step
    from zoo.training.evaluate import load_run

    record, model, _ = load_run(source)
    rnn = recurrent_layers(model)[0]
    return {"model": record.config.model, "parameters": int(model.count_params()),
            "macs_per_step": cell_macs_per_step(rnn.cell, rnn.input.shape[-1]),
            "steps_per_window": int(rnn.input.shape[1]) if rnn.input.shape[1] else None,
            "frames_per_step": record.config.frames_per_step,
            "cell": type(rnn.cell).__name__,
            "model_options": {k: v for k, v in rnn.cell.get_config().items()
                              if isinstance(v, (int, float, str, bool)) and k not in ("name", "trainable")}}


def environment_ready() -> str | None:
    """None when the cross toolchain and QEMU are installed, else what is missing (with the
    Debian packages that hold it)."""
    from zoo.export.profile.engine import missing_tools

    return missing_tools([TARGETS["cortex-m4"]])
