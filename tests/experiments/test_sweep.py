"""``zoo sweep``: the trials it plans, the tables it writes, and a tiny sweep on a local Ray
(run, resumed, then the shipping retrain on all training subjects)."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from experiments import engine, tables, trials
from training.tasks import get_task

REPO = Path(__file__).resolve().parents[2]


def test_the_cli_and_the_package_import_neither_ray_nor_tensorflow():
    code = ("import sys; from edge_rnn_zoo.cli import build_parser; import experiments.sweep; "
            "build_parser('sweep').parse_args(['sweep', 'cv', '--task', 'har2', '--model', 'sirnn']);"
            "print(sorted(m for m in ('ray', 'tensorflow', 'keras', 'jax') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         check=True).stdout
    assert out.strip() == "[]"


def test_a_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(SystemExit, match=r"edge-rnn-zoo\[sweep\]"):
        engine.require_ray()


def _base():
    return trials.base_config("har2", "sirnn", None, {"epochs": 3,
                                                        "model_options": {"units": 8, "rank": 4}})


def test_cv_trials_hold_out_each_fold_once_per_variant(tmp_path):
    planned = trials.cv_trials("har2", "sirnn", _base(), {"a": {}, "b": {"lr": 0.003}}, 5,
                               tmp_path, None)
    assert len(planned) == 10 and len({t.run_dir for t in planned}) == 10
    for variant in ("a", "b"):
        mine = [t for t in planned if t.variant == variant]
        assert [t.config["task_options"]["val_fold"] for t in mine] == [[k, 5] for k in range(5)]
        assert all(t.config["early_stopping_patience"] == 0 for t in mine)  # whole curves
        assert all(t.config["model_options"]["state_clip"] == 1.0 for t in mine)  # recipe kept
    assert {t.config["lr"] for t in planned if t.variant == "b"} == {0.003}
    # The shipped recipe's own fold (val_fold [1, 5]) is replaced, not kept beside ours.
    assert _base()["task_options"] == {"val_fold": [1, 5]}


def test_the_final_trial_trains_on_every_training_subject(shared_data, tmp_path):
    cv = trials.cv_trials("har2", "sirnn", _base(), {"a": {}}, 2, tmp_path, None)[0]
    final = trials.final_trial(cv, 7, tmp_path)
    config = final.config
    assert config["epochs"] == 7 and config["early_stopping_patience"] == 0
    data = get_task("har2", **config["task_options"]).load(shared_data / "har")
    assert len(data.val) == 0 and data.info["train_subjects"] == [1, 3, 21, 25]
    assert len(data.train) == 1505  # the whole training split of the subset


def test_the_cv_epoch_is_the_peak_of_the_fold_mean_curve():
    rng = np.random.default_rng(0)
    curves = [list(rng.uniform(80, 95, size=n)) for n in (12, 10, 11)]
    epoch, at = tables.cv_epoch(curves)
    means = np.mean([c[:10] for c in curves], axis=0)  # only epochs every fold ran
    assert epoch == int(np.argmax(means)) + 1
    assert at == [c[epoch - 1] for c in curves]


def _sweep(out: Path, *extra) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "edge_rnn_zoo.cli", "sweep", "cv", "--task", "har2", "--model",
           "sirnn", "--data-dir", str(REPO.parent / "shared" / "data" / "har"), "--folds", "2",
           "--epochs", "1", "--option", "units=8", "--option", "rank=4", "--out", str(out),
           "--results", str(out.parent / "results"),  # not the repository's results folder
           "--num-cpus", "2", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.slow
def test_a_tiny_sweep_runs_on_local_ray_resumes_and_ships(tmp_path):
    out = tmp_path / "sweep"
    first = _sweep(out)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "0 of 2 trials already finished" in first.stdout
    table = (out / "results.md").read_text()
    assert "| har2 | sirnn | base | 2 / 2 (folds 0, 1) | 163 |" in table
    runs = sorted(out.glob("har2/sirnn/base/fold*/metrics.json"))
    assert len(runs) == 2
    validation = [json.loads(p.read_text())["data"]["val"] for p in runs]
    assert all(v > 0 for v in validation) and sum(validation) == 1505  # folds partition subjects
    stamps = [p.stat().st_mtime_ns for p in runs]
    assert "epoch    1/1" in (out / "har2/sirnn/base/fold0.log").read_text()  # the trial's log

    second = _sweep(out, "--final")  # the CV is reused; the shipping retrain runs
    assert second.returncode == 0, second.stdout + second.stderr
    assert "2 of 2 trials already finished" in second.stdout
    assert [p.stat().st_mtime_ns for p in runs] == stamps  # not retrained
    final = json.loads((out / "har2/sirnn/final-base-e1/metrics.json").read_text())
    assert final["data"]["train"] == 1505 and final["data"]["val"] == 0
    assert final["epochs_run"] == 1
    assert "final-base-e1" in (out / "final.md").read_text()


def test_the_realscale_table_keeps_its_runs_and_settings(tmp_path):
    import argparse

    from experiments.benchmarks import realscale

    parser = argparse.ArgumentParser()
    realscale.add_table_arguments(parser)
    args = parser.parse_args(["--har", "h", "--dsa", "d", "--seeds", "2", "--out", str(tmp_path)])
    args.backend = "tensorflow"
    planned = trials.realscale_trials(args)
    assert len(planned) == len(realscale.grid(args)) == 2 * 2 * len(realscale.MODELS)
    for t, (task, label, seed) in zip(planned, realscale.grid(args)):
        assert t.run_dir == str(realscale.run_dir_of(tmp_path, task, label, seed).resolve())
        assert t.config == realscale.run_config(task, label, seed, args).to_dict()
        assert t.data_dir.endswith("/h" if task == "har2" else "/d")


def _row(variant, folds, vals):
    return {"task": "har2", "label": "m", "variant": variant, "folds": folds,
            "runs": [{"val": v} for v in vals]}


def test_the_paired_table_pairs_folds_and_is_scipys_t_test():
    from scipy import stats

    base, other = [90.0, 85.0, 93.0, 91.0], [92.5, 86.0, 93.5, 94.0]
    rows = [_row("base", [0, 1, 2, 3], base), _row("imu", [3, 0, 1, 2, 4], other[3:] + other[:3]
                                                   + [99.0])]
    line = tables.paired_table(rows).splitlines()[-1]
    t = stats.ttest_rel(other, base).statistic  # fold 4 has no partner: left out
    assert f"| 4 | {np.mean(np.subtract(other, base)):+.2f} ± " in line and f"(t {t:+.2f})" in line
    assert line.endswith("| yes |") == (stats.ttest_rel(other, base).pvalue < 0.05)
    lonely = tables.paired_table([_row("base", [0], [90.0]), _row("imu", [1], [91.0])])
    assert lonely.splitlines()[-1].endswith("| 0 | - | - |")


def test_a_results_file_from_another_machine_is_reused_and_a_changed_setting_is_not(tmp_path):
    """A campaign spread over machines: the results file of a trial that ran in another clone
    (another recipe path, another sweep folder), as `record_result` writes it, stands for the
    same trial here, QAT stage and all; a trial whose settings differ in anything else is not
    taken for it."""
    variants = {"f": {}, "q": {"epochs": 2, "init_from": "variant:f"}}
    here = trials.cv_trials("har2", "sirnn", _base(), variants, 2, tmp_path / "here", None,
                            results=tmp_path / "results")
    there = trials.cv_trials("har2", "sirnn", _base(), variants, 2, tmp_path / "there", None)
    for mine, theirs in zip(here, there):
        theirs = dataclasses.replace(theirs, config={
            **theirs.config, "recipe": "/elsewhere/zoo/models/recipes/har2-sirnn.yaml"})
        keep = {k: getattr(theirs, k) for k in ("task", "label", "variant", "fold", "folds")}
        Path(mine.result).parent.mkdir(parents=True, exist_ok=True)
        Path(mine.result).write_text(json.dumps(
            {**keep, "config": trials.portable(theirs.config, theirs.run_dir),  # as written
             "summary": {"val": 90.0 + mine.fold}}))
    assert [trials.recorded(t) for t in here] == [{"val": 90.0}] * 2 + [{"val": 91.0}] * 2
    assert here[1].config["init_from"].endswith("here/har2/sirnn/f/fold0")

    changed = trials.cv_trials("har2", "sirnn", _base(), {**variants, "f": {"lr": 0.003}}, 2,
                               tmp_path / "here", None, results=tmp_path / "results")
    assert [trials.recorded(t) for t in changed] == [None, {"val": 90.0}, None, {"val": 91.0}]
    elsewhere = dataclasses.replace(here[1], config={**here[1].config, "init_from": "/other/run"})
    assert trials.recorded(elsewhere) is None  # a parent outside the sweep is compared as given


def test_report_rebuilds_the_table_from_the_results_files_alone(tmp_path, monkeypatch, capsys):
    """``--report`` on a machine without the data (and no network): the trials' results files,
    written elsewhere, give the table; nothing is loaded or trained."""
    from experiments import sweep

    results = tmp_path / "results"
    planned = trials.cv_trials("har2", "sirnn", _base(), {"base": {}}, 2, tmp_path / "out", None,
                               results=results)
    for t, val in zip(planned, (91.0, 93.0)):
        Path(t.result).parent.mkdir(parents=True, exist_ok=True)
        Path(t.result).write_text(json.dumps({
            "task": "har2", "label": "sirnn", "variant": "base", "fold": t.fold, "folds": 2,
            "config": trials.portable(t.config, t.run_dir),
            "summary": {"val": val, "curve": [val - 5, val], "test": 90.0, "parameters": 163,
                        "seconds": 7.0, "epochs": 2, "best_epoch": 2}}))
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data-here"))
    monkeypatch.setenv("ZOO_OFFLINE", "1")
    code = sweep.main(["cv", "--task", "har2", "--model", "sirnn", "--folds", "2", "--epochs", "3",
                       "--option", "units=8", "--option", "rank=4", "--out", str(tmp_path / "out"),
                       "--results", str(results), "--report"])
    assert code == 0
    table = capsys.readouterr().out
    assert "| har2 | sirnn | base | 2 / 2 (folds 0, 1) |" in table and "92.00 ± 1.41" in table
    assert not list((tmp_path / "out").glob("har2/sirnn/base/fold*/metrics.json"))  # none trained


def test_sweeps_sharing_an_out_folder_keep_each_others_plan(tmp_path, monkeypatch):
    """A campaign runs its SiRNN, GRU and LSTM sweeps into one --out: the plan (sweep.json, what
    `--final` and experiments/campaigns/har2_final.py read) holds all their trials; a sweep run
    again replaces its own entries, not the others'. (Each used to overwrite the file.)"""
    from experiments.sweep import record_plan

    base = {"sirnn": _base(), "gru": trials.base_config("har2", "gru", "none", {"epochs": 3})}
    plans = {label: trials.cv_trials("har2", label, config, {"a": {}}, 2, tmp_path, None)
             for label, config in base.items()}
    for label in ("sirnn", "gru", "sirnn"):
        monkeypatch.setattr(sys, "argv", ["zoo", "sweep", "cv", "--model", label])
        record_plan(tmp_path, plans[label])
    saved = json.loads((tmp_path / "sweep.json").read_text())
    assert sorted(t["run_dir"] for t in saved["trials"]) == sorted(
        t.run_dir for t in plans["sirnn"] + plans["gru"])
    assert [c[-1] for c in saved["argvs"]] == ["gru", "sirnn"]


def test_a_trial_is_recorded_in_the_plan_as_the_dict_it_was_and_pickles(tmp_path):
    """`Trial` is what the engines ship to their workers (spawned processes pickle it, Ray too)
    and what sweep.json records: the same keys in the same order as the plain dict it replaced
    (a real-scale trial's entry without ``result``), read back into an equal trial."""
    import argparse
    import pickle

    from experiments.benchmarks import realscale

    cv = trials.cv_trials("har2", "sirnn", _base(), {"a": {}}, 2, tmp_path, None,
                          results=tmp_path / "results")[0]
    keys = ["task", "label", "variant", "fold", "folds", "config", "run_dir", "data_dir", "result"]
    assert list(cv.to_dict()) == keys
    assert trials.Trial.from_dict(json.loads(json.dumps(cv.to_dict()))) == cv
    assert pickle.loads(pickle.dumps(cv)) == cv
    final = trials.final_trial(cv, 3, tmp_path)
    assert list(final.to_dict()) == keys and final.result is None and final.fold is None
    assert final.name == "har2 / sirnn / a / final" and cv.name == "har2 / sirnn / a / fold 0"
    parser = argparse.ArgumentParser()
    realscale.add_table_arguments(parser)
    args = parser.parse_args(["--har", "h", "--dsa", "d", "--seeds", "1", "--out", str(tmp_path)])
    args.backend = "tensorflow"
    scale = trials.realscale_trials(args)[0]
    assert list(scale.to_dict()) == keys[:-1]
    assert trials.Trial.from_dict(scale.to_dict()) == scale
    with pytest.raises(dataclasses.FrozenInstanceError):
        cv.run_dir = "elsewhere"
