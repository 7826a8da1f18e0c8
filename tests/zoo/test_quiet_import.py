"""``import zoo`` writes nothing to stderr and loads no TensorFlow; the first use of a Keras-side
name loads it with TensorFlow's native start-up lines captured (issue 22, item 3), and only that
import: a user's own ``import tensorflow`` prints as it would without the zoo, and fd 2 is the
process's own afterwards (issue 51, item 4).

Each check runs a fresh interpreter: the lines come from TensorFlow's shared libraries loading,
once per process. The reference for "what TensorFlow prints" is the same import without the zoo
(``import tensorflow``), so the tests stay meaningful on a machine where TensorFlow is silent.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _python(code: str, **env) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=180, env=full_env)


@pytest.fixture(scope="module")
def tensorflow_alone_stderr() -> str:
    """What a bare ``import tensorflow`` writes to stderr here, TF_CPP_MIN_LOG_LEVEL=3 or not."""
    return _python("import tensorflow as tf; tf.config.list_physical_devices()").stderr


def test_import_zoo_loads_no_keras_and_is_silent():
    proc = _python("import os, sys, zoo; zoo.list_pretrained(); "
                   "print(sorted(m for m in ('tensorflow', 'keras', 'jax') if m in sys.modules)); "
                   "os.write(2, b'native line after import zoo')")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    assert proc.stderr == "native line after import zoo"


@pytest.mark.parametrize("code", [
    "import zoo; zoo.create_model('sirnn', (16, 3), 2)",
    "import zoo.irnn",  # a family module directly
    # The other packages, as a script run with ``python -m`` imports them (zoo not first).
    "import zoo.training.trainer",
    "import zoo.export.exporter",
    "import zoo.experiments.sequence_int8",
])
def test_first_keras_use_is_silent_and_leaves_stderr_the_processs_own(code,
                                                                      tensorflow_alone_stderr):
    """Silent while TensorFlow loads for the zoo; then fd 2 is where the process started it:
    Python's and a native library's writes after the zoo (and TensorFlow) loaded reach the
    caller (issue 51 item 4: never left redirected)."""
    proc = _python(code + "\nimport os, sys\nprint('python line', file=sys.stderr, flush=True)\n"
                   "os.write(2, b'native line\\n')")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "python line\nnative line\n", \
        f"bare TensorFlow writes:\n{tensorflow_alone_stderr}"


def _without_stamps(stderr: str) -> list[str]:
    """TensorFlow's lines without what differs between two runs (time, thread id)."""
    return [re.sub(r"^([IWE])\d{4} [\d:.]+\s+\d+ ", r"\1 ", line) for line in stderr.splitlines()]


def test_a_users_own_tensorflow_import_after_import_zoo_prints_as_without_the_zoo(
        tensorflow_alone_stderr):
    """Issue 51 item 4: ``import zoo`` captures only the imports the zoo itself makes; a user's
    ``import tensorflow`` afterwards writes what it writes without the zoo."""
    if not tensorflow_alone_stderr:
        pytest.skip("TensorFlow prints nothing at import on this machine")
    proc = _python("import zoo; import tensorflow as tf; tf.config.list_physical_devices()")
    assert proc.returncode == 0, proc.stderr
    assert _without_stamps(proc.stderr) == _without_stamps(tensorflow_alone_stderr)


def test_a_python_m_script_is_silent(tensorflow_alone_stderr):
    proc = subprocess.run([sys.executable, "-m", "zoo.export.convert", "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=180,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", f"bare TensorFlow writes:\n{tensorflow_alone_stderr}"


def test_jax_backend_import_is_silent():
    proc = _python("import zoo; zoo.create_model('sirnn', (16, 3), 2)", KERAS_BACKEND="jax")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_level_0_shows_tensorflow_lines(tensorflow_alone_stderr):
    """TF_CPP_MIN_LOG_LEVEL=0 (what ``zoo --verbose`` sets) asks for every line: none is hidden."""
    bare = _python("import tensorflow as tf; tf.config.list_physical_devices()",
                   TF_CPP_MIN_LOG_LEVEL="0").stderr
    if not bare:
        pytest.skip("TensorFlow prints nothing at import on this machine")
    proc = _python("import zoo; zoo.create_model('sirnn', (16, 3), 2)", TF_CPP_MIN_LOG_LEVEL="0")
    assert proc.stderr != ""


def test_a_failing_body_replays_what_it_wrote(capfd):
    from zoo.quiet import native_stderr_captured

    with pytest.raises(RuntimeError):
        with native_stderr_captured():
            os.write(2, b"native line before the failure\n")
            raise RuntimeError("import failed")
    assert "native line before the failure" in capfd.readouterr().err


def test_a_succeeding_body_writes_nothing(capfd):
    from zoo.quiet import native_stderr_captured

    with native_stderr_captured():
        os.write(2, b"native start-up line\n")
    assert capfd.readouterr().err == ""


def test_zoo_list_loads_no_keras_and_lists_pretrained():
    code = ("import sys; from edge_rnn_zoo.cli import main; code = main(['list']); "
            "print('LOADED', sorted(m for m in ('tensorflow', 'keras') if m in sys.modules))")
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    assert "LOADED []" in proc.stdout
    assert "sirnn.har2" in proc.stdout  # plain `zoo list` includes the pretrained models
    assert "Models (" in proc.stdout and "Tasks (" in proc.stdout
    assert proc.stderr == ""


def test_a_zoo_model_loads_whatever_imported_keras_first():
    """``import zoo.qat`` first imports Keras while a zoo module is mid-import, so the cells are
    not registered yet (`zoo._load_keras_side_when_safe`); the zoo's loader registers them
    itself, the pretrained loader too. (`zoo ship` of a lean QAT run failed so: "Could not
    locate class 'SiRNN'".)"""
    tag = REPO / "models" / "pretrained" / "sirnn.har2"
    model = tag / "model.keras"
    parameters = str(json.loads((tag / "card.json").read_text())["parameters"])  # ship's count
    unregistered = _python("import zoo.qat, keras\n"
                           "print(sum('SiRNN' in k for k in keras.saving.get_custom_objects()))")
    assert unregistered.stdout.split()[-1] == "0", unregistered.stderr[-2000:]
    loaded = _python("import zoo.qat\nfrom zoo.training.artifacts import load_keras_model\n"
                     f"print(load_keras_model({str(model)!r}).count_params())")
    assert loaded.returncode == 0 and loaded.stdout.split()[-1] == parameters, loaded.stderr[-2000:]
    pretrained = _python("import zoo.qat\nfrom zoo.pretrained import load_pretrained\n"
                         "print(load_pretrained('sirnn.har2', normalize=False).count_params())")
    assert pretrained.returncode == 0 and pretrained.stdout.split()[-1] == parameters, \
        pretrained.stderr[-2000:]
