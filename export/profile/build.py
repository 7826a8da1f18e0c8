"""Building the harnesses of ``zoo profile``: the exported C compiled for one target (or the
host) beside a harness from ``harness/``, linked on the tiny runtime of its architecture (no
libc: the same start-up and output code everywhere); and the firmware figures of a build: flash
and RAM from ``size`` (the smallest program running the model once, minus an empty one, -Os)
and the deepest stack chain from gcc's ``-fcallgraph-info=su``.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from zoo.export.profile.counting import PROGRAM_NAME, MeasurementError, sh
from zoo.export.profile.targets import Target

HARNESS = "zoo.export.profile.harness"
HARNESS_FILES = ("profile_io.h", "profile_main.c", "profile_kws.c", "min_model.c", "min_kws.c",
                 "empty.c", "rt_arm.c", "rt_riscv.c", "rt_host.c")
COMMON = ("-std=c99", "-ffunction-sections", "-fdata-sections")


@dataclass(frozen=True)
class Program:
    """What one build compiles: the export's C sources (``sources``, in ``c_dir``), the harness
    file that holds main (``main``) and the folder of generated headers (``generated``:
    profile_names.h, profile_windows.h)."""

    c_dir: Path
    sources: tuple[str, ...]
    main: str
    generated: Path


def copy_harness(folder: Path) -> Path:
    """The harness's fixed C files, copied into ``folder`` (the installed package's own)."""
    folder.mkdir(parents=True, exist_ok=True)
    root = resources.files(HARNESS)
    for name in HARNESS_FILES:
        (folder / name).write_bytes(root.joinpath(name).read_bytes())
    return folder


def _compile(cc: str, flags, program: Program, harness: Path, source: Path, out: Path) -> None:
    sh([cc, *flags, *COMMON, f"-I{program.generated}", f"-I{harness}", f"-I{program.c_dir}",
        "-c", source, "-o", out], cwd=out.parent)


def build_target(target: Target, program: Program, harness: Path, folder: Path, opt: str,
                 main: str | None = None, extra=()) -> Path:
    """``folder/count.elf``: ``main`` (the program's harness by default) and the export's
    sources at ``opt`` for ``target``, on its runtime; ``extra``: more compiler flags
    (``-fcallgraph-info=su`` for the size build)."""
    folder.mkdir(parents=True, exist_ok=True)
    flags = [*target.flags, *target.defines, opt, *extra]
    objects = []
    for source in (harness / (main or program.main),
                   *(program.c_dir / s for s in program.sources)):
        objects.append(folder / (source.stem + ".o"))
        _compile(target.cc, flags, program, harness, source, objects[-1])
    runtime = folder / "zp_runtime.o"
    sh([target.cc, *target.flags, "-O2", "-c", harness / f"rt_{target.arch}.c",
        "-o", runtime])
    elf = folder / PROGRAM_NAME
    sh([target.cc, *target.flags, "-nostdlib", "-nostartfiles", "-Wl,--gc-sections", *objects,
        runtime, *target.libs, "-o", elf])
    return elf


def build_host(program: Program, harness: Path, folder: Path) -> Path:
    """The same harness and sources built with the host's cc at -O2 (libc's write): the
    reference the cross builds' check output is compared with."""
    folder.mkdir(parents=True, exist_ok=True)
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise MeasurementError("no host C compiler (cc or gcc) to build the reference")
    flags = ["-O2", *COMMON, f"-I{program.generated}", f"-I{harness}", f"-I{program.c_dir}"]
    sources = [harness / program.main, harness / "rt_host.c",
               *(program.c_dir / s for s in program.sources)]
    elf = folder / PROGRAM_NAME
    sh([cc, *flags, *sources, "-o", elf])
    return elf


def parse_size(text: str) -> tuple[int, int, int]:
    """(text, data, bss) bytes from ``size`` (Berkeley format) of one file."""
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


_NODE = re.compile(r'node: \{ title: "([^"]+)" label: "[^"]*\\n(\d+) bytes')
_EDGE = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')


def parse_call_graph(texts) -> tuple[dict[str, int], dict[str, set[str]]]:
    """(frame bytes by function, callees by function) from gcc ``-fcallgraph-info=su`` files
    (VCG text); functions without a frame figure (libgcc's) count 0."""
    frames, calls = {}, {}
    for text in texts:
        for name, size in _NODE.findall(text):
            frames[name] = int(size)
        for caller, callee in _EDGE.findall(text):
            calls.setdefault(caller, set()).add(callee)
    return frames, calls


def deepest_stack(frames: dict[str, int], calls: dict[str, set[str]], root: str = "main") -> int:
    """The deepest chain of frames from ``root`` (the call graph has no recursion; a cycle is an
    error rather than a figure)."""
    memo: dict[str, int] = {}

    def depth(name: str, path: tuple) -> int:
        if name in path:
            raise MeasurementError(f"recursive call chain {' -> '.join(path + (name,))}: no "
                                   "static stack bound")
        if name not in memo:
            memo[name] = frames.get(name, 0) + max(
                (depth(c, path + (name,)) for c in calls.get(name, ())), default=0)
        return memo[name]

    return depth(root, ())


def firmware_figures(target: Target, program: Program, harness: Path, folder: Path,
                     smallest: str) -> dict:
    """Flash and RAM of the model in a firmware for ``target`` (-Os): the ``smallest`` program
    (running it once) minus ``empty.c`` on the same runtime; flash = text + data, RAM = data +
    bss + the deepest stack chain from the smallest program's main."""
    empty = build_target(target, program, harness, folder / "empty", "-Os", main="empty.c")
    mine = build_target(target, program, harness, folder / "smallest", "-Os", main=smallest,
                        extra=("-fcallgraph-info=su",))
    size = lambda elf: parse_size(sh([target.size, elf]))
    (e_text, e_data, e_bss), (m_text, m_data, m_bss) = size(empty), size(mine)
    graph = parse_call_graph(p.read_text() for p in sorted((folder / "smallest").glob("*.ci")))
    stack = deepest_stack(*graph)
    return {"flash_bytes": m_text + m_data - e_text - e_data,
            "static_ram_bytes": m_data + m_bss - e_data - e_bss, "stack_bytes": stack,
            "ram_bytes": m_data + m_bss - e_data - e_bss + stack}
