"""The README's "Use it" block, run end to end as written (the HAR subset makes it minutes):
train, eval, export to int8 step and to C, the TensorFlow-free device benchmark, analyze. Each
command must exit 0; the C export's own check (every test window equal to TFLite Micro) runs
inside `zoo export --form c`."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def use_it_commands() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_use_it_block_is_the_sequence_this_test_runs():
    words = [shlex.split(c)[:2] for c in use_it_commands()]
    assert [w[1] if w[0] == "zoo" else w[0] for w in words] == [
        "list", "train", "eval", "export", "export", "python", "analyze"]


@pytest.mark.slow
def test_the_use_it_block_runs_as_written(tmp_path, shared_data):
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "shared").symlink_to(shared_data.parent)   # ../shared/data/... as written
    (work / "export").symlink_to(REPO / "export")          # python export/device_bench.py
    zoo = [sys.executable, "-m", "edge_rnn_zoo"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for command in use_it_commands():
        words = shlex.split(command)
        argv = zoo + words[1:] if words[0] == "zoo" else [sys.executable] + words[1:]
        done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr, command
    assert (work / "runs/har2/export-c-int8/har2_model.c").is_file()  # the run's name
