"""The instruction-count protocol of ``zoo profile`` (and ``tools/cortexm``): a harness runs as
``app NAME PART N`` under QEMU user mode with the ``insncount`` plugin (``harness/insncount.c``,
built with the host's gcc into a cache folder), runs PART N times and prints
``done NAME PART n=N`` (N as given: zero-padded); the plugin prints ``insns: COUNT`` at exit. Per call =
(count(2N) - count(N)) / N, so start-up cancels.

A count must reproduce to the instruction: the initial stack's alignment follows the length of
the program's path, its arguments and its environment (up to 23 instructions a step moved with
them). So QEMU runs with an empty environment, argv[0] fixed (``-0 app``), the program by a
fixed relative name from its own folder, and N and 2N written with the same number of digits.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

_COUNT = re.compile(r"insns: (\d+)")
PROGRAM_NAME = "count.elf"  # every counted program's file name, run as ./count.elf
ARGV0 = "app"


class MeasurementError(RuntimeError):
    """A harness, the toolchain or the plugin did not give what the protocol needs."""


def parse_count(output: str, name: str, part: str, n: int) -> int:
    """The instruction count of one QEMU run from its output (the harness's stdout and the
    plugin's stderr together), checked to be the run of ``name part n`` that finished."""
    found = _COUNT.search(output)
    if not re.search(rf"done {re.escape(name)} {re.escape(part)} n=0*{n}\b", output):
        raise MeasurementError(f"the harness did not finish `{name} {part} {n}` (no line "
                               f"'done {name} {part} n={n}'): {output[-300:]!r}")
    if not found:
        raise MeasurementError(f"no 'insns: COUNT' line from the plugin: {output[-300:]!r}")
    return int(found.group(1))


def per_call_of(count_n: int, count_2n: int, n: int) -> float:
    """Instructions per call from the counts of N and 2N calls: what start-up costs cancels."""
    return (count_2n - count_n) / n


def per_window(step: float, head: float, steps: int) -> float:
    """Instructions per window: ``steps`` net steps and the head once."""
    return steps * step + head


def per_second(window: float, window_seconds: float) -> float:
    """Instructions per second of signal of a window of ``window_seconds`` seconds."""
    return window / window_seconds


def cache_dir() -> Path:
    """Where the plugin is built: $ZOO_CACHE_DIR, else $XDG_CACHE_HOME or ~/.cache, under
    edge-rnn-zoo/profile (never inside the installed package)."""
    base = os.environ.get("ZOO_CACHE_DIR")
    if base:
        return Path(base) / "profile"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "edge-rnn-zoo" / "profile"


def plugin() -> Path:
    """The instruction-count plugin, built with the host's gcc the first time (named by its
    source's hash, so that a changed source is rebuilt; written atomically)."""
    source = resources.files("zoo.export.profile.harness").joinpath("insncount.c").read_bytes()
    folder = cache_dir()
    path = folder / f"libinsncount-{hashlib.sha256(source).hexdigest()[:12]}.so"
    if path.is_file():
        return path
    if shutil.which("gcc") is None:
        raise MeasurementError("no host gcc to build the QEMU instruction-count plugin "
                               "(apt: gcc)")
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        (Path(tmp) / "insncount.c").write_bytes(source)
        built = Path(tmp) / "libinsncount.so"
        sh(["gcc", "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-o", built,
            Path(tmp) / "insncount.c"])
        os.replace(built, path)
    return path


def qemu_command(qemu, name: str, part: str, n: int, digits: int = 8,
                 plugin_path: Path | None = None) -> list[str]:
    """The fixed-path command line: ``QEMU [-plugin P -d plugin] -0 app ./count.elf NAME PART
    N`` (N zero-padded to ``digits``); run it with `run_fixed`."""
    exe = shutil.which(qemu[0])
    if exe is None:
        raise MeasurementError(f"{qemu[0]} not found")
    counting = ["-plugin", str(plugin_path), "-d", "plugin"] if plugin_path else []
    return [exe, *qemu[1:], *counting, "-0", ARGV0, f"./{PROGRAM_NAME}", name, part,
            f"{n:0{digits}d}"]


def run_fixed(command: list[str], folder: Path, timeout: float = 600) -> str:
    """Run ``command`` in ``folder`` (which holds ./count.elf) with an empty environment;
    its stdout and stderr together, and its exit status when it failed."""
    done = subprocess.run(command, cwd=folder, env={}, capture_output=True, text=True,
                          timeout=timeout)
    status = f"\n(exit {done.returncode})" if done.returncode else ""
    return done.stdout + done.stderr + status


def count(folder: Path, qemu, name: str, part: str, n: int) -> int:
    """Instructions the program ``folder/count.elf`` executes running PART N times."""
    command = qemu_command(qemu, name, part, n, plugin_path=plugin())
    return parse_count(run_fixed(command, folder), name, part, n)


def per_call(folder: Path, qemu, name: str, part: str, n: int) -> float:
    """Instructions per run of PART: (count(2N) - count(N)) / N."""
    return per_call_of(count(folder, qemu, name, part, n), count(folder, qemu, name, part, 2 * n), n)


def output_of(folder: Path, qemu, name: str, part: str, n: int) -> str:
    """The stdout of ``count.elf NAME PART N`` under QEMU without the plugin (a check run)."""
    done = subprocess.run(qemu_command(qemu, name, part, n), cwd=folder, env={},
                          capture_output=True, text=True, timeout=600)
    if done.returncode or not re.search(rf"done {name} {part} n=0*{n}\b", done.stdout):
        raise MeasurementError(f"`{name} {part} {n}` under {qemu[0]} failed (exit "
                               f"{done.returncode}): {(done.stderr or done.stdout)[-300:]!r}")
    return done.stdout


def sh(cmd, **kw) -> str:
    """stdout of a command; `MeasurementError` with its stderr's tail when it fails."""
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if done.returncode:
        raise MeasurementError(f"{' '.join(map(str, cmd))}: exit {done.returncode}: "
                               f"{(done.stderr or done.stdout)[-800:]}")
    return done.stdout
