"""`zoo bench`: the target verdicts on hand-made rows, and one small real run end to end."""

import csv

import pytest

from zoo.experiments.bench import targets


def row(model, family, mode, form, accuracy, size, latency, arena=None):
    return {"model": model, "family": family, "mode": mode, "form": form, "accuracy": accuracy,
            "bytes": size, "latency_us": latency, "arena_bytes": arena}


def test_targets_pick_the_smallest_rival_within_one_point():
    rows = [row("sirnn", "zoo", "int8", "step", 93.0, 9000, 700, 4500),
            row("lstm-16", "keras", "none", "sequence", 92.5, 15000, 300),
            row("lstm-80", "keras", "int8", "sequence-unrolled", 94.0, 1_000_000, 900),
            row("gru-16", "keras", "int8", "step", 91.0, 5000, 200)]  # 2 points below: no rival
    text = "\n".join(targets(rows))
    assert "lstm-16" in text and "Bytes ratio 0.600" in text and "MISSED" in text
    assert "latency ratio 2.33" in text
    assert "arena 4,500 bytes (target <= 8 KB: met)" in text


def test_targets_met_when_the_rival_is_four_times_larger():
    rows = [row("sirnn", "zoo", "int8", "step", 93.0, 9000, 700, 4500),
            row("gru-80", "keras", "none", "step", 93.5, 40000, 800)]
    text = "\n".join(targets(rows))
    assert "Bytes ratio 0.225 (target <= 0.25: met)" in text
    assert "latency ratio 0.88 (target <= 1: met)" in text


@pytest.mark.slow
def test_zoo_bench_one_small_run(tmp_path, shared_data, monkeypatch, capsys):
    """``zoo bench`` end to end, in this process (the command's own parse, logs and exit
    status; no second TensorFlow start-up). One epoch: nothing checked depends on accuracy."""
    from edge_rnn_zoo.cli import main

    out = tmp_path / "bench"
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    code = main(["bench", "--task", "har2", "--data-dir", str(shared_data / "har"), "--out",
                 str(out), "--models", "sirnn", "--units", "16", "--baselines", "gru:8",
                 "--epochs", "1", "--modes", "int8", "--runs", "3"])
    assert code == 0, capsys.readouterr().err[-3000:]
    rows = list(csv.DictReader(open(out / "results.csv")))
    assert [(r["model"], r["mode"]) for r in rows] == [("sirnn", "int8"), ("gru-8", "int8")]
    for r in rows:
        assert r["form"] == "step"  # both have one state: streaming int8 step models
        assert int(r["bytes"]) > 0 and float(r["latency_us"]) > 0
        assert 0 < float(r["fraction_of_peak"]) < 1  # achieved MAC/s below the measured peak
        assert int(r["macs_per_sequence"]) > 0 and int(r["arena_bytes"]) > 0
    table = (out / "results.md").read_text()
    assert "GMAC/s" in table and "Best zoo int8 step model: sirnn" in table
    assert (out / "pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_zoo_bench_without_data_says_so_first_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    """Issue 43 item 7: on a fresh clone `zoo bench --task har2` (a README command) timed the
    runtime, created bench/har2, then failed for want of data and left it behind. The data is
    checked first: one line saying where it looked and what to fetch, nothing written."""
    from edge_rnn_zoo.cli import main
    from zoo.experiments import bench

    monkeypatch.setattr(bench, "matmul_peak", lambda: pytest.fail("timed before the data check"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "no-data").mkdir()
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))
    assert main(["bench", "--task", "har2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("zoo bench: error: ") and len(err.splitlines()) == 1, err
    assert "not found" in err and str(tmp_path / "no-data") in err
    assert not (tmp_path / "bench").exists()
