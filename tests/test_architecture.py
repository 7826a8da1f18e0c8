"""The project's layering, checked: imports go one way, and the command line answers without
loading TensorFlow.

Layers (each may import only the layers before it, and its own)::

    0 zoo                      cells, registry, pretrained models
    1 training.data / .tasks   datasets and tasks
    2 training                 trainer, run directory, evaluation
    3 export                   TFLite / TFLite Micro export and its device files
    4 experiments              benchmarks and studies built on the layers below
    5 command line             the `zoo` dispatcher and each subcommand's `cli` module
"""

from __future__ import annotations

import ast
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("zoo", "training", "export", "experiments", "edge_rnn_zoo")

# Longest prefix wins.
LAYER_OF_PREFIX = {
    "zoo": 0,
    "training.data": 1, "training.tasks": 1, "training.storage": 1,
    "training": 2,
    "export": 3,
    "experiments.benchmarks": 4, "experiments.analysis": 4, "experiments.bench": 4, "experiments.quality": 4,
    "experiments.kws_bench": 4, "experiments.ship": 4, "experiments.device_latency": 4, "experiments": 4,
    "edge_rnn_zoo": 5, "edge_rnn_zoo.train_cli": 5, "edge_rnn_zoo.export_cli": 5, "edge_rnn_zoo.analyze_cli": 5,
}
LAYER_NAMES = ["cells (zoo)", "data and tasks", "training", "export", "experiments",
               "command line"]


def layer(module: str) -> int | None:
    best = None
    for prefix in LAYER_OF_PREFIX:
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > len(best):
                best = prefix
    return None if best is None else LAYER_OF_PREFIX[best]


def project_modules():
    for package in PACKAGES:
        if not (REPO / package).is_dir():
            continue
        for path in sorted((REPO / package).rglob("*.py")):
            yield ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(
                ".__init__"), path


def imports_of(path: Path):
    """(line, module) of every import statement, at module level or inside a function."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            for alias in node.names:  # `from training import rundir` imports training.rundir
                yield node.lineno, f"{node.module}.{alias.name}"


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


def test_every_module_has_a_layer():
    assert [m for m, _ in project_modules() if layer(m) is None] == []


def test_no_module_imports_a_layer_above_its_own():
    assert upward_imports() == []


def test_the_walk_finds_an_upward_import(tmp_path, monkeypatch):
    """The check itself: a cell module that imports the trainer is reported."""
    fake = tmp_path / "zoo"
    fake.mkdir()
    (fake / "bad.py").write_text("def f():\n    from training.trainer import train\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    found = upward_imports()
    assert len(found) == 1 and "zoo/bad.py:2" in found[0] and "training.trainer" in found[0]


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("argv", [
    ["--help"], ["train", "--help"], ["eval", "--help"], ["export", "--help"],
    ["bench", "--help"], ["analyze", "--help"], ["list", "--help"],
    ["train", "--task", "har9", "--model", "sirnn"], ["train", "--task", "har2", "--model", "lsmt"],
    ["train", "--task", "har2"], ["eval", "no/such/run"], ["export", "no/such/run", "--tflite"],
    ["analyze", "no/such/run"], ["frobnicate"], ["list", "tasks"],
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


def test_zoo_help_answers_within_a_second():
    best = min(_timed([sys.executable, "-m", "edge_rnn_zoo", "--help"]) for _ in range(3))
    assert best < 1.0, f"`zoo --help` took {best:.2f} s"


def _timed(argv) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return time.perf_counter() - start


def test_builtin_model_names_are_the_registry():
    """`zoo train` checks --model against the registry's source lines (no Keras); they must be
    exactly what the loaded registry holds."""
    import zoo
    from edge_rnn_zoo.train_cli import builtin_model_names

    assert builtin_model_names() == sorted(zoo.list_models())
