"""Keep TensorFlow's native start-up lines off stderr: ``import zoo`` writes nothing there.

What prints, and what silences it (TensorFlow 2.21, checked on a machine without a GPU)::

    WARNING: All log messages before absl::InitializeLog() ...   absl, while TensorFlow's
    I0000 ... cudart_stub.cc] Could not find cuda drivers ...    shared libraries load (twice:
    I0000 ... cpu_feature_guard.cc] This TensorFlow binary ...   two libraries carry the stub)
    I0000 ... oneDNN custom operations are on ...                at import, x86 CPUs with oneDNN
    E0000 ... failed call to cuInit ...                          first device query, CUDA wheels
                                                                 installed but no driver

These come from C++ before absl's logging is initialised, when ``TF_CPP_MIN_LOG_LEVEL`` is not
yet applied (tensorflow/tensorflow#100442): the variable only silences later lines.
``CUDA_VISIBLE_DEVICES=""`` does not stop the stub from probing for the driver (it still prints)
and would hide a real GPU. ``TF_ENABLE_ONEDNN_OPTS=0`` silences the oneDNN line only by turning
oneDNN off, which changes float results (TensorFlow's own line says so): the zoo's numbers must
not depend on whether its logs are quiet, so it is never set here.

What works is to point file descriptor 2 at a temporary file for the moment TensorFlow (or Keras,
which imports it) loads and first lists its devices, and to replay that file if the import fails,
so nothing an error says is lost. `install` does this for the first import of ``tensorflow`` or
``keras`` in the process when the zoo's own code makes it (a ``zoo.*`` or ``edge_rnn_zoo``
module is on the importing stack: ``zoo.create_model``, ``import zoo.irnn``, ``python -m
zoo.export.convert``, the ``zoo`` command), and only for that import: fd 2 is the process's own
again before the import returns. A user's own ``import tensorflow`` after ``import zoo`` is left
alone, its lines printed as without the zoo: ``import zoo`` has no effect on stderr that the user
did not ask for (issue 51). The same hook runs what `after_import` asked for once the module
has loaded, whoever imported it: ``import zoo`` registers its layers with Keras serialization the
moment Keras loads.

A user who sets ``TF_CPP_MIN_LOG_LEVEL=0`` asks for every TensorFlow log line: nothing is
captured then (``zoo --verbose`` sets it). Any other level hides at least the info lines, which
the start-up lines are (but for the harmless cuInit error on a machine without a GPU).
"""

from __future__ import annotations

import contextlib
import importlib.abc
from typing import Callable
import importlib.machinery
import os
import sys
import tempfile

# Top-level modules whose first import is run with fd 2 captured.
NOISY_MODULES = ("tensorflow", "keras")
# module -> what to run once it has loaded (see `after_import`).
_AFTER_LOAD: dict[str, list[Callable[[], None]]] = {}


def quiet_environment(level: str = "3") -> None:
    """Set the log-level variables, a user's own setting winning. Call before TensorFlow loads:
    they silence TensorFlow's C++ lines written after absl is initialised, and gRPC's."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", level)
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


def wants_native_logs() -> bool:
    """True when ``TF_CPP_MIN_LOG_LEVEL`` is 0: every TensorFlow log line asked for."""
    return os.environ.get("TF_CPP_MIN_LOG_LEVEL", "").strip() == "0"


@contextlib.contextmanager
def native_stderr_captured():
    """Run the body with the process's fd 2 in a temporary file; replay it if the body raises."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            sink.seek(0)
            sys.stderr.write(sink.read().decode(errors="replace"))
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


# Modules whose imports of TensorFlow / Keras are the zoo's own (see `imported_by_the_zoo`).
ZOO_PACKAGES = ("zoo", "edge_rnn_zoo")


def _module_name(frame) -> str:
    """The module a frame runs in, by its spec when it has one: ``python -m zoo.export.convert``
    runs as ``__main__`` with the spec ``zoo.export.convert``."""
    spec = frame.f_globals.get("__spec__")
    return getattr(spec, "name", None) or frame.f_globals.get("__name__") or ""


def imported_by_the_zoo() -> bool:
    """True when a module of `ZOO_PACKAGES` is on the current stack: the import under way is
    the zoo's own (directly, or through a library the zoo called), not a user's."""
    frame = sys._getframe(1)
    while frame is not None:
        # The loader's own frames are on the stack of every wrapped import (a user's ``import
        # keras`` nests TensorFlow's): they say nothing about who imported.
        if frame.f_code is not _QuietLoader.exec_module.__code__ and \
                _module_name(frame).split(".")[0] in ZOO_PACKAGES:
            return True
        frame = frame.f_back
    return False


class _QuietLoader(importlib.abc.Loader):
    """Wraps the real loader of a noisy module: when the zoo imports it, executes it with fd 2
    captured, and for TensorFlow also lists the devices (the CUDA probe logs on first use, not
    at import); a user's own import runs as it would without the zoo."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        quiet = not wants_native_logs() and imported_by_the_zoo()
        with native_stderr_captured() if quiet else contextlib.nullcontext():
            self._loader.exec_module(module)
            if module.__name__ == "tensorflow" and quiet:
                # Physical devices only: memory growth and visible devices can still be set.
                module.config.list_physical_devices()
            for callback in _AFTER_LOAD.pop(module.__name__, []):
                callback()

    def __getattr__(self, name):  # resource readers, get_filename, ... of the real loader
        return getattr(self._loader, name)


class _QuietFinder(importlib.abc.MetaPathFinder):
    """Finds ``tensorflow`` / ``keras`` as the rest of ``sys.meta_path`` would, with its loader
    wrapped in `_QuietLoader`."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in NOISY_MODULES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and not isinstance(spec.loader, _QuietLoader):
                    spec.loader = _QuietLoader(spec.loader)
                return spec
        return None


_FINDER = _QuietFinder()


def install() -> None:
    """Capture fd 2 during the first import of TensorFlow / Keras in this process when the zoo
    makes it (a no-op when they are already imported or when installed twice; checks
    `wants_native_logs` and `imported_by_the_zoo` at that import). Sets no variable: what
    TensorFlow logs after its import is the caller's choice."""
    if _FINDER not in sys.meta_path and not all(m in sys.modules for m in NOISY_MODULES):
        sys.meta_path.insert(0, _FINDER)


def after_import(module_name: str, callback: Callable[[], None]) -> None:
    """Run ``callback`` once ``module_name`` (one of `NOISY_MODULES`) has loaded: now if it has,
    else right after its first import (`install` must be in force)."""
    if module_name not in NOISY_MODULES:
        raise ValueError(f"module_name must be one of {NOISY_MODULES}, got {module_name!r}")
    if module_name in sys.modules:
        callback()
    else:
        _AFTER_LOAD.setdefault(module_name, []).append(callback)


def import_keras_quietly() -> None:
    """Import Keras (and TensorFlow, which every ``zoo`` command but ``list`` uses, whatever
    the Keras backend) now, with the native start-up lines captured."""
    install()
    import keras  # noqa: F401

    with contextlib.suppress(ImportError):
        import tensorflow  # noqa: F401
