"""device_bench.py on the tflite-micro runtime reports on stdout and leaves stderr empty: TFLite
Micro's Python API has no tensor count, and the probing that finds it made the C++ runtime print
"Input index 2 out of range" lines on every run."""

import json
from pathlib import Path

import pytest

from zoo.export import device_bench

SHIPPED = Path(__file__).resolve().parents[2] / "models" / "archive" / "sirnn.har2_gen1"


@pytest.mark.skipif(not __import__("importlib").util.find_spec("tflite_micro"),
                    reason="tflite-micro missing")
def test_tflite_micro_run_prints_nothing_on_stderr(capfd):
    export = next(SHIPPED.glob("export-step-*"))
    rc = device_bench.main([str(export), "--runtime", "tflite-micro", "--runs", "3", "--warmup",
                            "0", "--json"])
    out, err = capfd.readouterr()
    assert rc == 0 and json.loads(out.splitlines()[-1])["form"] == "step"
    assert err == ""
