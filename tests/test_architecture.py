"""The project's layering, checked: imports go one way, modules stay small and self-contained,
and the command line answers without loading TensorFlow.

The folders are the layers (each may import only the layers before it, and its own)::

    0 zoo/core/                            flags, logs, storage and locks: imports no other layer
    1 zoo/                                 cells, registry, pretrained models
    2 training/data/, training/tasks/      datasets and tasks
    3 training/                            trainer, run directory, evaluation
    4 export/                              TFLite / TFLite Micro export and its device files
    5 experiments/                         benchmarks, studies, the theory report, shipping
      tools/cortexm/                       the device measurements (scripts beside the layers)
    6 edge_rnn_zoo/                        the `zoo` dispatcher and each subcommand's module

A module's layer is that of the deepest folder (or file) of `LAYER_OF_PATH` that holds it; no
entry puts a module in a higher layer than its folder. The script folders (`SCRIPT_DIRS`, not
installed) import each other by bare name (``import measurement``), which is resolved here to the
file beside the importer. Besides: no import cycle between modules, nor between the files and
sub-folders of one folder (export/c_backend/ and export/kws_stream.py, say), no private name (``_x``) imported from another module, no module over `MAX_LINES` lines.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Import name -> its folder in the checkout (setup.py installs the layers' folders under ``zoo``).
PACKAGE_DIRS = {"zoo.training": "training", "zoo.export": "export",
                "zoo.experiments": "experiments", "zoo": "zoo", "edge_rnn_zoo": "edge_rnn_zoo"}
PACKAGES = ("zoo", "edge_rnn_zoo")
# Folders of scripts run from the checkout (python tools/cortexm/x.py): checked as modules named
# by their path (tools.cortexm.measurement).
SCRIPT_DIRS = ("tools/cortexm",)

# Folder (or file) -> layer; the deepest entry holding a module wins.
LAYER_OF_PATH = {
    "zoo/core": 0,
    "zoo": 1,
    "training/data": 2, "training/tasks": 2,
    "training": 3,
    "export": 4,
    "experiments": 5, "tools/cortexm": 5,
    "edge_rnn_zoo": 6,
}
LAYER_NAMES = ["core (zoo/core)", "cells (zoo)", "data and tasks", "training", "export",
               "experiments", "command line"]
MAX_LINES = 600


def folder_of(module: str) -> str:
    """A dotted module name as a path in the checkout, without suffix (``zoo.training.trainer``
    -> ``training/trainer``)."""
    for package, folder in PACKAGE_DIRS.items():  # the longest names first
        if module == package or module.startswith(package + "."):
            return folder + module[len(package):].replace(".", "/")
    return module.replace(".", "/")


def module_of(path: Path) -> str:
    """The dotted import name of a module file of the checkout."""
    parts = path.relative_to(REPO).with_suffix("").parts
    name = "/".join(parts).removesuffix("/__init__")
    for package, folder in sorted(PACKAGE_DIRS.items(), key=lambda kv: -len(kv[1])):
        if name == folder or name.startswith(folder + "/"):
            return package + name[len(folder):].replace("/", ".")
    return name.replace("/", ".")


def layer(module: str) -> int | None:
    """The layer of a dotted module name (or of a name inside a module) from its folders."""
    parts = folder_of(module).split("/")
    for k in range(len(parts), 0, -1):
        key = "/".join(parts[:k])
        for entry in (key + ".py", key):
            if entry in LAYER_OF_PATH:
                return LAYER_OF_PATH[entry]
    return None


def project_modules():
    for folder in (*PACKAGE_DIRS.values(), *SCRIPT_DIRS):
        if not (REPO / folder).is_dir():
            continue
        for path in sorted((REPO / folder).rglob("*.py")):
            yield module_of(path), path


def _sibling(imported: str, module: str, modules) -> str:
    """A script folder's bare import (``measurement``) as the module beside the importer."""
    folder = module.rsplit(".", 1)[0]
    if folder.replace(".", "/") in SCRIPT_DIRS and f"{folder}.{imported}" in modules:
        return f"{folder}.{imported}"
    return imported


def _absolute(node: ast.ImportFrom, module: str, path: Path) -> str | None:
    """The absolute module of a ``from`` import (``from .card_schema import x`` in export/...)."""
    if node.level == 0:
        return node.module
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else [])) or None


def imports_of(path: Path, module: str | None = None):
    """(line, module) of every import statement, at module level or inside a function; with
    ``module`` given, relative imports too (as absolute names)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level and module is None:
                continue
            base = _absolute(node, module, path) if module else node.module
            if not base:
                continue
            yield node.lineno, base
            for alias in node.names:  # `from training import rundir` imports zoo.training.rundir
                yield node.lineno, f"{base}.{alias.name}"


def upward_imports():
    found = {}
    for module, path in project_modules():
        own = layer(module)
        for line, imported in imports_of(path):
            theirs = layer(imported) if imported.split(".")[0] in PACKAGES else None
            if theirs is not None and own is not None and theirs > own:
                found.setdefault((path, line), f"{path.relative_to(REPO)}:{line}: {module} "
                                 f"({LAYER_NAMES[own]}) imports {imported} "
                                 f"({LAYER_NAMES[theirs]})")
    return list(found.values())


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (``from a import b`` counts as a.b when that is
    a module, else as a; a package's ``__init__`` only when named). Read once per checkout
    (``REPO``) and test session: the module and the folder checks share it."""
    return {module: set(targets) for module, targets in _import_graph_of(REPO).items()}


@functools.lru_cache(maxsize=None)
def _import_graph_of(repo: Path) -> dict[str, set[str]]:
    modules = dict(project_modules())
    graph = {m: set() for m in modules}
    for module, path in modules.items():
        for _, imported in imports_of(path, module):
            imported = _sibling(imported, module, modules)
            if imported in modules and imported != module:
                graph[module].add(imported)
    # `from a import b` yields both a and a.b: keep a only where b is not a module of a
    for module, targets in graph.items():
        graph[module] = {t for t in targets
                         if not any(o.startswith(t + ".") for o in targets)
                         or _names_a_package_attribute(modules[module], module, t)}
    return graph


def _names_a_package_attribute(path: Path, module: str, package: str) -> bool:
    """Whether ``module`` imports something from ``package`` itself (not only its submodules)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and _absolute(node, module, path) == package:
            if any(not (REPO / folder_of(package) / a.name).with_suffix(".py").exists()
                   and not (REPO / folder_of(package) / a.name).is_dir()
                   for a in node.names):
                return True
        if isinstance(node, ast.Import) and any(a.name == package for a in node.names):
            return True
    return False


def import_cycles() -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    return strongly_connected(import_graph())


def folder_import_graph() -> dict[str, set[str]]:
    """Each folder's parts (its files and its sub-folders, as dotted names) -> the parts of the
    same folder they import: ``zoo.export.c_backend.kws`` importing ``zoo.export.kws_stream``
    is the arrow ``zoo.export.c_backend -> zoo.export.kws_stream``. Nodes are (folder, part)
    names joined, so that the parts of different folders never meet."""
    graph: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        for target in targets:
            # the deepest folder holding both: the arrow runs between its two parts
            a, b = module.split("."), target.split(".")
            shared = 0
            while shared < min(len(a), len(b)) - 1 and a[shared] == b[shared]:
                shared += 1
            if shared == 0 or a[:shared + 1] == b[:shared + 1]:
                continue  # different packages, or one part inside the other (its __init__)
            source, sink = ".".join(a[:shared + 1]), ".".join(b[:shared + 1])
            graph.setdefault(source, set()).add(sink)
            graph.setdefault(sink, set())
    return graph


def folder_cycles() -> list[list[str]]:
    """Parts of one folder that import each other, through any of their files: two files can be
    free of a cycle while their folders are not (as ``kws_stream`` -> ``c_backend.graph`` and
    ``c_backend.kws`` -> ``kws_stream`` were)."""
    return strongly_connected(folder_import_graph())


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node of ``graph`` (Tarjan), each sorted."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(cycles)


def private_imports() -> list[str]:
    """``from a.b import _x`` where a.b is another project module (dunders are public)."""
    found = []
    modules = dict(project_modules())
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _sibling(_absolute(node, module, path) or "", module, modules)
            if source not in modules or source == module:
                continue
            for alias in node.names:
                name = alias.name
                if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: {module} imports "
                                 f"{name} from {source}")
    return found


def test_every_module_has_a_layer():
    assert [m for m, _ in project_modules() if layer(m) is None] == []


def test_no_entry_lifts_a_module_above_its_folder():
    """The table's deeper entries may only put modules lower than their folder (zoo/core is
    below the cells), never higher: an experiment or a CLI module moves to its folder."""
    for entry, value in LAYER_OF_PATH.items():
        parent = "/".join(entry.removesuffix(".py").split("/")[:-1])
        above = layer(parent.replace("/", ".")) if parent else None
        if above is not None:  # tools/ is no layer: tools/cortexm is a script folder of its own
            assert value <= above, entry


def test_no_module_imports_a_layer_above_its_own():
    assert upward_imports() == []


def test_the_core_imports_nothing_of_the_project_but_itself():
    """flags, logs, storage and locks are what every layer stands on: a core module that
    imports a cell, a task or the trainer (even inside a function) would pull a layer under
    the ones that import it."""
    found = [f"{path.relative_to(REPO)}:{line}: {module} imports {imported}"
             for module, path in project_modules() if module.startswith("zoo.core")
             for line, imported in imports_of(path, module)
             if imported.split(".")[0] in PACKAGES and not imported.startswith("zoo.core")]
    assert found == []
    assert any(module.startswith("zoo.core.") for module, _ in project_modules())


def test_the_walk_finds_an_upward_import(tmp_path, monkeypatch):
    """The check itself: a cell module that imports the trainer is reported."""
    fake = tmp_path / "zoo"
    fake.mkdir()
    (fake / "bad.py").write_text("def f():\n    from zoo.training.trainer import train\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    found = upward_imports()
    assert len(found) == 1 and "zoo/bad.py:2" in found[0] and "zoo.training.trainer" in found[0]


def test_no_import_cycle():
    """Not even through an import inside a function: two modules that need each other are one
    module, or share a third below both."""
    assert import_cycles() == []


def test_the_walk_finds_a_cycle_and_a_private_import(tmp_path, monkeypatch):
    fake = tmp_path / "export"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "a.py").write_text("from zoo.export.b import _helper\n")
    (fake / "b.py").write_text("def _helper():\n    from .a import thing\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert import_cycles() == [["zoo.export.a", "zoo.export.b"]]
    found = private_imports()
    assert len(found) == 1 and "export/a.py:1" in found[0] and "_helper" in found[0]


def test_no_folder_level_import_cycle():
    """A folder's files and sub-folders import one another one way: a sub-folder (the C
    backend) and a file beside it (the streaming reference) do not need each other, even
    through different files; what both need lives below both."""
    assert folder_cycles() == []


def test_the_walk_finds_a_folder_level_cycle(tmp_path, monkeypatch):
    """The check itself: no module cycle, but ``export/a.py`` and the folder ``export/sub/``
    import each other through different files."""
    fake = tmp_path / "export"
    (fake / "sub").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "sub" / "__init__.py").write_text("")
    (fake / "a.py").write_text("from zoo.export.sub.low import x\n")
    (fake / "sub" / "low.py").write_text("x = 1\n")
    (fake / "sub" / "high.py").write_text("from zoo.export.a import y\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert import_cycles() == []
    assert folder_cycles() == [["zoo.export.a", "zoo.export.sub"]]


def test_no_private_name_is_imported_from_another_module():
    assert private_imports() == []


def test_no_module_is_over_the_line_limit():
    long = {str(path.relative_to(REPO)): n for _, path in project_modules()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"split these (at most {MAX_LINES} lines): {long}"


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("argv", [
    ["--help"], ["train", "--help"], ["eval", "--help"], ["export", "--help"],
    ["bench", "--help"], ["analyze", "--help"], ["list", "--help"],
    ["train", "--task", "har9", "--model", "sirnn"], ["train", "--task", "har2", "--model", "lsmt"],
    ["train", "--task", "har2"], ["eval", "no/such/run"], ["export", "no/such/run", "--tflite"],
    ["export", "no/such/run"],
    ["analyze", "no/such/run"], ["frobnicate"], ["list", "tasks"],
    ["device", "--help"], ["device"], ["device", "frobnicate"], ["sweep", "--help"],
])
def test_help_and_usage_errors_load_no_tensorflow(argv, tmp_path):
    argv = [str(tmp_path / a) if a.startswith("no/") else a for a in argv]
    code = ("import sys; from edge_rnn_zoo.cli import main\n"
            f"try:\n    code = main({argv!r})\nexcept SystemExit as e:\n    code = e.code\n"
            "print('LOADED', sorted(m for m in ('tensorflow', 'keras', 'jax') if m in sys.modules))\n"
            "print('EXIT', code)")
    proc = _run(code)
    assert "LOADED []" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    exit_code = proc.stdout.split("EXIT")[-1].strip()
    if argv[-1] not in ("--help", "tasks"):
        assert exit_code == "2" and "error" in proc.stderr, (exit_code, proc.stderr[-2000:])
    assert "--tflite" not in proc.stderr  # optional: TFLite is the default (and only) format


def every_help_line() -> list[list[str]]:
    """``zoo X --help`` for every subcommand, and ``zoo X NAME --help`` for every script."""
    from edge_rnn_zoo.cli import SCRIPTS, SUBCOMMANDS

    lines = [[name, "--help"] for name in SUBCOMMANDS]
    lines += [[name, script, "--help"] for name, group in SCRIPTS.items() for script in group
              if script]
    return lines


@pytest.mark.slow
def test_every_subcommand_and_script_answers_help():
    """Each ``--help`` exits 0 with a usage line and no traceback (one process: TensorFlow loads
    once)."""
    lines = every_help_line()
    assert ["bench", "realscale", "--help"] in lines and ["ship", "--help"] in lines
    code = ("import contextlib, io, sys; from edge_rnn_zoo.cli import main\n"
            f"for argv in {lines!r}:\n"
            "    out = io.StringIO()\n"
            "    try:\n"
            "        with contextlib.redirect_stdout(out):\n"
            "            code = main(argv)\n"
            "    except SystemExit as e:\n"
            "        code = e.code\n"
            "    ok = code in (0, None) and out.getvalue().startswith('usage: ')\n"
            "    print('HELP', ' '.join(argv), 'OK' if ok else f'FAILED {code!r}', flush=True)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    results = [line for line in proc.stdout.splitlines() if line.startswith("HELP ")]
    assert len(results) == len(lines), proc.stdout[-3000:]
    assert [r for r in results if not r.endswith(" OK")] == []


def test_each_script_keeps_its_python_m_entry():
    """`zoo bench NAME` and friends run a module's main(argv); each still runs as python -m."""
    from edge_rnn_zoo.cli import SCRIPTS

    for group in SCRIPTS.values():
        for module, _ in group.values():
            source = (REPO / folder_of(module)).with_suffix(".py").read_text(
                encoding="utf-8")
            assert "def main(argv" in source and 'if __name__ == "__main__":' in source, module


def test_zoo_help_answers_within_a_second():
    best = min(_timed([sys.executable, "-m", "edge_rnn_zoo", "--help"]) for _ in range(3))
    assert best < 1.0, f"`zoo --help` took {best:.2f} s"


def _timed(argv) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return time.perf_counter() - start


def test_builtin_model_names_are_the_registry():
    """`zoo train` checks --model against `zoo.model_table.MODELS` (no Keras); its names must be
    exactly what the loaded registry holds."""
    import zoo
    from edge_rnn_zoo.train_cli import builtin_model_names

    assert builtin_model_names() == sorted(zoo.list_models())
