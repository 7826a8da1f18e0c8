"""The Cortex-M measurement protocol of ``tools/cortexm``, in one module: executed-instruction
counts of the drivers under QEMU with the ``libinsncount.so`` plugin (``insncount.c``), the
arithmetic that turns them into instructions per call, per window and per second of signal, the
flash / RAM figures of a firmware, and the MACs of a model (`zoo.macs`).

Every driver (``main.cc``, ``c_main.c``, ``kws_main.c``, ``dscnn_main.cc``) runs as
``DRIVER MODEL PART N``: it runs PART (a step, a head, the driver's own loop, ...) N times and
prints ``done MODEL PART n=N``; the plugin prints ``insns: COUNT`` at exit. Per call =
(count(2N) - count(N)) / N, so start-up (AllocateTensors, table set-up) cancels; a step's net
figure subtracts the driver's loop (its input generation and feedback copying).

    python tools/cortexm/measure.py ...   # and c_cards.py, c_frontier.py, kws_measure.py: the scripts
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLUGIN = HERE / "libinsncount.so"
CPU = "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"
_COUNT = re.compile(r"insns: (\d+)")


class MeasurementError(RuntimeError):
    """A driver, the toolchain or the plugin did not give what the protocol needs."""


def parse_count(output: str, model: str, part: str, n: int) -> int:
    """The instruction count of one QEMU run from its output (the driver's stdout and the
    plugin's stderr together), checked to be the run of ``model part n`` that finished."""
    found = _COUNT.search(output)
    if f"done {model} {part} n={n}" not in output:
        raise MeasurementError(f"the driver did not finish `{model} {part} {n}` (no line "
                               f"'done {model} {part} n={n}'): {output[-300:]!r}")
    if not found:
        raise MeasurementError(f"no 'insns: COUNT' line from the plugin: {output[-300:]!r}")
    return int(found.group(1))


def qemu_command(elf, model: str, part: str, n: int, machine: str | None = None) -> list[str]:
    """qemu-arm (linux-user, ``-cpu cortex-a15`` running the Cortex-M Thumb-2 binary), or with
    ``machine`` qemu-system-arm -M MACHINE (a real M-profile CPU model, semihosting arguments)."""
    if machine is None:
        return ["qemu-arm", "-cpu", "cortex-a15", "-plugin", str(PLUGIN), "-d", "plugin", str(elf),
                model, part, str(n)]
    return ["qemu-system-arm", "-M", machine, "-nographic", "-semihosting-config",
            f"enable=on,target=native,arg=app,arg={model},arg={part},arg={n}",
            "-plugin", str(PLUGIN), "-d", "plugin", "-kernel", str(elf)]


def count(elf, model: str, part: str, n: int, machine: str | None = None) -> int:
    """Instructions the whole program executes running PART N times."""
    done = subprocess.run(qemu_command(elf, model, part, n, machine), capture_output=True,
                          text=True, timeout=600)
    return parse_count(done.stdout + done.stderr, model, part, n)


def per_call_of(count_n: int, count_2n: int, n: int) -> float:
    """Instructions per call from the counts of N and 2N calls: what start-up costs cancels."""
    return (count_2n - count_n) / n


def per_call(elf, model: str, part: str, n: int, machine: str | None = None) -> float:
    """Instructions per run of PART: (count(2N) - count(N)) / N."""
    return per_call_of(count(elf, model, part, n, machine), count(elf, model, part, 2 * n, machine), n)


def per_window(step: float, head: float, steps: int) -> float:
    """Instructions per window: ``steps`` net steps and the head once."""
    return steps * step + head


def per_second(window: float, window_seconds: float) -> float:
    """Instructions per second of signal of a window of ``window_seconds`` seconds."""
    return window / window_seconds


def ensure_plugin() -> Path:
    """The instruction-count plugin, built (host gcc) when it is not there yet."""
    if not PLUGIN.is_file():
        sh(["make", "-s", "-C", str(HERE), "libinsncount.so"])
    return PLUGIN


def sh(cmd, **kw) -> str:
    """stdout of a command; `MeasurementError` with its stderr's tail when it fails."""
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if done.returncode:
        raise MeasurementError(f"{' '.join(map(str, cmd))}: exit {done.returncode}: "
                               f"{(done.stderr or done.stdout)[-800:]}")
    return done.stdout


def parse_size(text: str) -> tuple[int, int, int]:
    """(text, data, bss) bytes from ``arm-none-eabi-size`` (Berkeley format) of one file."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2 or not lines[0].split()[:3] == ["text", "data", "bss"]:
        raise MeasurementError(f"not the output of `size` on one file: {text[-300:]!r}")
    text_b, data_b, bss_b = (int(v) for v in lines[1].split()[:3])
    return text_b, data_b, bss_b


def parse_stack_usage(text: str) -> dict[str, int]:
    """``{function: stack bytes}`` from a gcc ``-fstack-usage`` file (``file:line:col:name\\tN\\tkind``)."""
    out = {}
    for line in text.splitlines():
        if line.strip():
            where, size = line.split("\t")[:2]
            out[where.split(":")[-1]] = int(size)
    return out


def c_firmware(c_dir, name: str, build) -> dict:
    """The Cortex-M4 figures of a C-backend export (``zoo export --form c``): flash (-Os, the
    smallest program running it once minus an empty one), RAM (its data + bss + the deepest
    stack chain from -fstack-usage) and instructions per step (-O2, net of the driver's loop)
    and per head call, under qemu-arm."""
    build = Path(build)
    sh(["make", "-s", "-C", HERE, f"B={build}", f"{build}/syscalls.o", f"{build}/empty.elf"])
    sh(["make", "-s", "-C", HERE, f"B={build}", f"C={c_dir}", f"NAME={name}",
        f"{build}/min-c-{name}.elf", f"{build}/c-{name}.elf"])
    size = lambda elf: parse_size(sh(["arm-none-eabi-size", elf]))
    empty, mine = size(build / "empty.elf"), size(build / f"min-c-{name}.elf")
    stack = parse_stack_usage((build / f"min-zoo_model-{name}.su").read_text())
    elf = build / f"c-{name}.elf"
    per = lambda part: per_call(elf, "m", part, 100)
    return {"cortex_m4_flash_bytes_Os": mine[0] + mine[1] - empty[0] - empty[1],
            "cortex_m4_ram_bytes": mine[2] - empty[2] + stack["zoo_push_q"] + stack.get("zoo_step_run", 0),
            "cortex_m4_instructions_per_step_O2": round(per("step") - per("loop"), 1),
            "cortex_m4_head_instructions_O2": round(per("head"), 1)}


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

    config, model, _ = load_run(source)
    rnn = recurrent_layers(model)[0]
    return {"model": config["model"], "parameters": int(model.count_params()),
            "macs_per_step": cell_macs_per_step(rnn.cell, rnn.input.shape[-1]),
            "steps_per_window": int(rnn.input.shape[1]) if rnn.input.shape[1] else None,
            "frames_per_step": int((config.get("task_options") or {}).get("frames_per_step") or 1),
            "cell": type(rnn.cell).__name__,
            "model_options": {k: v for k, v in rnn.cell.get_config().items()
                              if isinstance(v, (int, float, str, bool)) and k not in ("name", "trainable")}}


def environment_ready() -> str | None:
    """None when the cross toolchain and QEMU are installed, else what is missing."""
    import shutil

    missing = [t for t in ("arm-none-eabi-gcc", "qemu-arm", "gcc", "make") if shutil.which(t) is None]
    return f"missing {', '.join(missing)} (apt: gcc-arm-none-eabi qemu-user)" if missing else None
