"""``zoo profile``'s measurement of one C export on each target: the harness and the export's
exact C cross-built (-O2 for the counts, -Os for flash and RAM), run under QEMU user mode with
the instruction-count plugin (`counting`), its check windows compared with the host build of
the same C, and the figures per step, per window and per second of signal.

A step model: per step = step - the harness's loop, per window = T steps + the head. A keyword
model (its export carries the integer front end): the whole 10 ms hop that ``kws_app`` runs
(front end, input map, step, head, posteriors, recognizer) as the step, 100 hops a second.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from zoo.export.profile import build, counting
from zoo.export.c_backend.driver_names import names_header
from zoo.export.c_backend.names import c_names
from zoo.export.profile.source import KWS_SOURCES, is_kws
from zoo.export.profile.targets import APT_PACKAGES, Target

N_CALLS = 100  # calls per count (and 2N): enough that a call's figure is exact to 0.01
CHECK_WINDOWS = 8  # test windows (or generated ones) every target runs against the host
KWS_CHECK_HOPS = 120  # hops of the check run: past the state reset at hop 99
KWS_HOPS_PER_SECOND = 100


def missing_tools(targets) -> str | None:
    """None when every tool the ``targets`` need is on PATH, else one line naming them and
    the Debian packages that hold them."""
    needed = {"gcc", *(t for target in targets for t in target.tools)}
    missing = sorted(t for t in needed if shutil.which(t) is None)
    if not missing:
        return None
    return f"missing {', '.join(missing)}; install them with: apt-get install {APT_PACKAGES}"


@dataclass(frozen=True)
class Timing:
    """How often the export's step runs: ``steps_per_window`` steps make a window of
    ``window_seconds`` (None when the export does not say: a model without a task)."""

    steps_per_window: int
    window_seconds: float | None


def timing_of(c_dir: Path, kws: bool) -> Timing:
    """The export's timing from its model card's task (rows per second, frames per step)."""
    if kws:
        return Timing(KWS_HOPS_PER_SECOND, 1.0)
    check = json.loads((c_dir / "c_check.json").read_text())
    steps = int(check["timesteps"])
    try:
        from zoo.export.card_schema import CARD_FILE, ModelCard, load_card_json
        from zoo.training.tasks import get_task
        from zoo.training.tasks.frames import frames_per_step_of

        card = ModelCard.from_dict(load_card_json(str(c_dir / CARD_FILE)), str(c_dir / CARD_FILE))
        if card.task is None:  # a Keras model's export: no task, no rate
            return Timing(steps, None)
        task = get_task(card.task)
        frames = frames_per_step_of(card.task_options)
        return Timing(steps, steps * frames / task.rows_per_second)
    except (OSError, KeyError, ValueError, TypeError):
        return Timing(steps, None)


def check_windows(c_dir: Path) -> tuple[np.ndarray, str]:
    """(int8 windows (W, T, F), where from): the export's first test windows (testset.npz,
    normalized) quantized as the step model's input, or, without a test set, a fixed
    pseudo-random set (seed 0) of int8 inputs."""
    from zoo.export.tflite_graph import read_graph
    from zoo.export.card_schema import read_export_card
    from zoo.export.exportdir import load_testset

    check = json.loads((c_dir / "c_check.json").read_text())
    shape = (CHECK_WINDOWS, int(check["timesteps"]), int(check["features"]))
    if (c_dir / "testset.npz").is_file():
        card = read_export_card(str(c_dir))
        x, _ = load_testset(str(c_dir), card)
        step = read_graph((c_dir / card.files.step).read_bytes())
        tensor = step.tensor(step.inputs[card.step_io.x])
        q = np.round(np.asarray(x[:CHECK_WINDOWS], np.float32) / np.float32(tensor.scale))
        return np.clip(q + tensor.zero_point, -128, 127).astype(np.int8), "test windows"
    rng = np.random.default_rng(0)
    return rng.integers(-128, 128, size=shape).astype(np.int8), "generated int8 windows (seed 0)"


def windows_header(windows: np.ndarray) -> str:
    """profile_windows.h: the check windows as a C array."""
    rows = ",\n".join("  {" + ", ".join(str(int(v)) for v in w.reshape(-1)) + "}" for w in windows)
    return (f"#define PROFILE_WINDOWS {len(windows)}\n"
            f"static const int8_t profile_windows[{len(windows)}][{windows[0].size}] = {{\n"
            f"{rows}\n}};\n")


def _program(c_dir: Path, generated: Path, kws: bool) -> build.Program:
    source = c_names(c_dir)[2]
    if kws:
        return build.Program(c_dir, (*KWS_SOURCES, source), "profile_kws.c", generated)
    return build.Program(c_dir, (source,), "profile_main.c", generated)


def _check_part(kws: bool) -> tuple[str, int]:
    return ("check", KWS_CHECK_HOPS) if kws else ("check", 1)


def profile_export(c_dir: Path, targets: list[Target], work: Path,
                   progress: Callable[[str], None] = lambda line: None) -> dict:
    """The figures of the C export ``c_dir`` on each target (``work``: a scratch folder):
    ``{"targets": {name: {...}}, "source": ..., "kws": bool, "check": ...}``."""
    c_dir, work = Path(c_dir).resolve(), Path(work)
    kws = is_kws(c_dir)
    generated = work / "generated"
    generated.mkdir(parents=True, exist_ok=True)
    # the harness is written in the names before prefixes; this header maps them to the export's
    (generated / "profile_names.h").write_text(names_header(c_dir))
    windows, windows_from = check_windows(c_dir)
    if kws:
        windows_from = "a 440 Hz square wave with noise, through the whole pipeline"
    (generated / "profile_windows.h").write_text(windows_header(windows))
    harness = build.copy_harness(work / "harness")
    program = _program(c_dir, generated, kws)
    progress("host: building the reference")
    host_folder = build.build_host(program, harness, work / "host").parent
    part, n = _check_part(kws)
    reference = _host_output(host_folder, part, n)
    timing = timing_of(c_dir, kws)
    results = {}
    for target in targets:
        results[target.name] = _profile_target(target, program, harness, work / target.name,
                                               reference, kws, timing, progress)
    summary = json.loads((c_dir / "c_check.json").read_text())
    return {"targets": results, "kws": kws, "check": {"from": windows_from,
            "windows": KWS_CHECK_HOPS if kws else len(windows),
            "unit": "hops" if kws else "windows"},
            "c_export": {k: summary.get(k) for k in ("const_bytes", "state_bytes",
                                                     "bit_exact_with")}}


def _host_output(folder: Path, part: str, n: int) -> str:
    import subprocess

    done = subprocess.run([f"./{counting.PROGRAM_NAME}", "m", part, f"{n:08d}"], cwd=folder, env={},
                          capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise counting.MeasurementError(f"the host build failed its check run (exit "
                                        f"{done.returncode}): {done.stderr[-300:]!r}")
    return done.stdout


def _profile_target(target: Target, program: build.Program, harness: Path, folder: Path,
                    reference: str, kws: bool, timing: Timing, progress) -> dict:
    progress(f"{target.name}: building (-O2, -Os)")
    elf = build.build_target(target, program, harness, folder / "count", "-O2")
    firmware = build.firmware_figures(target, program, harness, folder / "size",
                                      "min_kws.c" if kws else "min_model.c")
    progress(f"{target.name}: checking against the host build")
    part, n = _check_part(kws)
    output = counting.output_of(elf.parent, target.qemu, "m", part, n)
    bit_exact = output == reference
    progress(f"{target.name}: counting instructions under {target.qemu[0]}")
    per = lambda p: counting.per_call(elf.parent, target.qemu, "m", p, N_CALLS)
    if kws:
        loop, hop, frontend = per("loop"), per("hop"), per("frontend")
        step, extra = hop - loop, {"frontend_instructions_per_hop": round(frontend - loop, 1),
                                   "model_instructions_per_hop": round(hop - frontend, 1),
                                   "pipeline": "front end + input map + step + head + "
                                               "posteriors + recognizer, per 10 ms hop"}
        window = step * timing.steps_per_window
    else:
        step, head = per("step") - per("loop"), per("head")
        extra = {"head_instructions": round(head, 1)}
        window = counting.per_window(step, head, timing.steps_per_window)
    second = (None if timing.window_seconds is None
              else round(counting.per_second(window, timing.window_seconds)))
    out = {"instructions_per_step": round(step, 1), "instructions_per_window": round(window),
           "instructions_per_second": second, "flash_bytes": firmware["flash_bytes"],
           "ram_bytes": firmware["ram_bytes"], "bit_exact": bit_exact, **extra,
           "static_ram_bytes": firmware["static_ram_bytes"],
           "stack_bytes": firmware["stack_bytes"], "core": target.core}
    if not bit_exact:
        out["mismatch"] = _first_difference(reference, output)
    if target.note:
        out["note"] = target.note
    return out


def _first_difference(reference: str, output: str) -> str:
    for want, got in zip(reference.splitlines(), output.splitlines()):
        if want != got:
            return f"host: {want[:120]!r}; target: {got[:120]!r}"
    return "the outputs differ in length"
