"""TFLite Micro: run a model under the tflite-micro Python interpreter, find the smallest arena,
and generate the C array, header and the C++ sources for a step export
(export/device_sources.py); `zoo.export.exportdir.ExportDirectory.write_sources` writes them.

The arena is measured with the Python interpreter (TFLM's own allocator and kernels, compiled for
the host); a device build with another toolchain or alignment may need a few bytes more, so the
C++ example adds headroom.

Some arenas too small for a model crash the interpreter (SIGSEGV) instead of failing to allocate:
measured on this tflite-micro build, every step model below ~450 bytes, and an int8 LSTM step
model (16 states) at 2,800-4,000 bytes, a GRU's at 3,900-3,950, while its smallest working arena
is 5,650. So every probe runs in a process of its own (`works_with_arena`; the bisection of
`smallest_arena` in one child process without TensorFlow, which forks a probe per arena), and a
crash counts as "does not fit".
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from zoo.export.device_runtime import count_micro_tensors, quiet_stderr
from zoo.export.device_sources import device_sources, resolver_calls
from zoo.export.exportdir import C_ARRAY_STEM

__all__ = ["micro_interpreter", "quiet_stderr", "works_with_arena", "smallest_arena",
           "smallest_arenas", "c_array_sources", "streaming_sources", "resolver_calls"]
MAX_ARENA = 64 * 2 ** 20


def micro_interpreter(tflite: bytes, arena_size: int):
    try:
        from tflite_micro.python.tflite_micro import runtime
    except ImportError as err:  # a missing runtime must not read as "the model does not fit"
        raise ImportError("TFLite Micro checks need the tflite-micro package "
                          "(pip install -e .): " + str(err)) from err

    return runtime.Interpreter.from_bytes(bytes(tflite), arena_size=int(arena_size))


def works_with_arena(tflite: bytes, arena_size: int) -> bool:
    """Whether the model allocates in ``arena_size`` bytes and runs one invoke on zero inputs
    (in a child process: a crash of TFLite Micro is a no)."""
    with tempfile.TemporaryDirectory(prefix="zoo_arena_") as tmp:
        path = os.path.join(tmp, "model.tflite")
        with open(path, "wb") as f:
            f.write(bytes(tflite))
        return _child(["--probe", str(int(arena_size)), path])["works"]


def smallest_arena(tflite: bytes, *, upper: int | None = None) -> int:
    """The smallest arena (bytes) with which the model allocates and invokes, by bisection."""
    return smallest_arenas({"model": tflite}, upper=upper)["model"]


def smallest_arenas(models: dict[str, bytes], *, upper: int | None = None) -> dict[str, int]:
    """`smallest_arena` of each model (name -> bytes), the bisections in one child process."""
    with tempfile.TemporaryDirectory(prefix="zoo_arena_") as tmp:
        paths = {}
        for name, data in models.items():
            paths[name] = os.path.join(tmp, f"{len(paths)}.tflite")
            with open(paths[name], "wb") as f:
                f.write(bytes(data))
        found = _child((["--upper", str(upper)] if upper else []) + list(paths.values()))
    return {name: found[path] for name, path in paths.items()}


def _child(args: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-m", "zoo.export.micro", *args], capture_output=True,
                          text=True, timeout=1800)
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if done.returncode == 0 and lines else None
    if not isinstance(result, dict):
        raise RuntimeError(f"the TFLite Micro arena search failed (exit {done.returncode}): "
                           f"{done.stderr.strip()[-500:]}")
    if "error" in result:
        raise RuntimeError(result["error"])
    return result


# ------------------------------------------------------------ the child: probes, each forked
def _probe(tflite: bytes, arena_size: int) -> bool:
    """One probe in a forked process where the platform forks (a crash is a no), else here."""
    if not hasattr(os, "fork"):
        return _probe_here(tflite, arena_size)
    pid = os.fork()
    if pid == 0:  # the child: no TensorFlow here, only TFLite Micro and numpy
        os._exit(0 if _probe_here(tflite, arena_size) else 1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _probe_here(tflite: bytes, arena_size: int) -> bool:
    with quiet_stderr():  # TFLM prints every failed allocation of the bisection
        try:
            interp = micro_interpreter(tflite, arena_size)
            for i in range(count_micro_tensors(interp.get_input_details)):
                d = interp.get_input_details(i)
                interp.set_input(np.zeros(d["shape"], dtype=d["dtype"]), i)
            interp.invoke()
            return True
        except ImportError:
            raise
        except Exception:  # noqa: BLE001 - "Failed to allocate tail memory" and friends
            return False


def _bisect(tflite: bytes, upper: int | None) -> int:
    hi = upper or max(10 * len(tflite), 16384)
    while not _probe(tflite, hi):
        hi *= 2
        if hi > MAX_ARENA:
            raise RuntimeError("model does not run under TFLite Micro even with a 64 MiB arena "
                               "(hybrid 'dynamic' models are not supported by TFLM)")
    lo = 0  # invariant: lo fails, hi works
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _probe(tflite, mid):
            hi = mid
        else:
            lo = mid
    return hi


def _main(argv: list[str]) -> int:
    """``python -m zoo.export.micro [--upper N] MODEL...`` prints {MODEL: smallest arena};
    ``--probe ARENA MODEL`` prints {"works": bool}; an error: {"error": text}."""
    try:
        if argv[0] == "--probe":
            with open(argv[2], "rb") as f:
                print(json.dumps({"works": _probe(f.read(), int(argv[1]))}))
            return 0
        upper = None
        if argv[0] == "--upper":
            upper, argv = int(argv[1]), argv[2:]
        found = {}
        for path in argv:
            with open(path, "rb") as f:
                found[path] = _bisect(f.read(), upper)
        print(json.dumps(found))
    except RuntimeError as err:
        print(json.dumps({"error": str(err)}))
    return 0


def _c_name(text: str) -> str:
    return re.sub(r"\W", "_", text)


def c_array_sources(models: dict[str, bytes], stem: str = C_ARRAY_STEM) -> dict[str, str]:
    """``model_data.h`` / ``.cc`` (file name -> text): one 16-byte-aligned array per model
    (``g_<name>_model_data``) and its length (``g_<name>_model_data_len``). TFLM needs the
    flatbuffer aligned."""
    guard = f"ZOO_EXPORT_{_c_name(stem).upper()}_H_"
    header = [f"// Generated by `zoo export`. TFLite flatbuffers as C arrays.", f"#ifndef {guard}",
              f"#define {guard}", "", "#include <cstddef>", ""]
    source = [f'#include "{stem}.h"', ""]
    for name, data in models.items():
        var = f"g_{_c_name(name)}_model_data"
        header += [f"extern const unsigned char {var}[];", f"extern const size_t {var}_len;"]
        source.append(f"alignas(16) const unsigned char {var}[] = {{")
        for start in range(0, len(data), 12):
            source.append("  " + ", ".join(f"0x{b:02x}" for b in data[start:start + 12]) + ",")
        source += ["};", f"const size_t {var}_len = {len(data)};", ""]
    header += ["", f"#endif  // {guard}", ""]
    return {f"{stem}.h": "\n".join(header), f"{stem}.cc": "\n".join(source)}


def streaming_sources(*, title: str, io_dtype: str, card, step_ops, head_ops) -> dict[str, str]:
    """The C++ sources of a step export (file name -> text): ``main.cc`` (the streaming loop),
    ``zoo_stream.h``, ``self_test.cc`` and a ``Makefile`` (see
    `zoo.export.device_sources.device_sources`)."""
    return device_sources(title=title, io_dtype=io_dtype, card=card, step_ops=step_ops,
                          head_ops=head_ops)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
