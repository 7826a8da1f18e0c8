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

from zoo.experiments import engine, tables, trials
from zoo.training.tasks import get_task
from tests.conftest import cv_results_record

REPO = Path(__file__).resolve().parents[2]


def test_the_cli_and_the_package_import_neither_ray_nor_tensorflow():
    code = ("import sys; from edge_rnn_zoo.cli import build_parser; import zoo.experiments.sweep; "
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


def _sweep_argv(out: Path) -> list[str]:
    return [sys.executable, "-m", "edge_rnn_zoo.cli", "sweep", "cv", "--task", "har2", "--model",
            "sirnn", "--data-dir", str(REPO.parent / "shared" / "data" / "har"), "--folds", "2",
            "--epochs", "1", "--option", "units=8", "--option", "rank=4", "--out", str(out),
            "--results", str(out.parent / "results"),  # not the repository's results folder
            "--num-cpus", "2"]


def _sweep(out: Path, *extra) -> subprocess.CompletedProcess:
    return subprocess.run(_sweep_argv(out) + list(extra), capture_output=True, text=True,
                          cwd=REPO, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO)})


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


@pytest.mark.slow
def test_final_retrains_a_qat_stage_from_its_parents_retrain_end_to_end(tmp_path):
    """``--final --engine processes`` when the CV chose a QAT stage: the CV is done elsewhere
    (its results files, so none of its runs is here, fold 0's included); the parent's retrain
    trains first at its CV epoch (2), then the stage fine-tunes it (1 epoch)."""
    import argparse

    from zoo.experiments import sweep

    out = tmp_path / "sweep"
    stages = ["--variant", "f={}", "--variant", 'q={"model_options": {"qat": "int8"}, "lr": '
              '0.001, "init_from": "variant:f"}']
    parser = argparse.ArgumentParser()
    sweep.add_sweep_arguments(parser)
    args = parser.parse_args(_sweep_argv(out)[4:] + stages)  # from "cv" on
    _finished_cv(sweep.plan(args), {"f": [[80.0, 85.0], [82.0, 86.0]], "q": [[88.0], [89.0]]})

    done = _sweep(out, *stages, "--engine", "processes", "--final")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 of 4 trials already finished" in done.stdout
    assert not (out / "har2/sirnn/f/fold0").exists()
    parent, stage = out / "har2/sirnn/final-f-e2", out / "har2/sirnn/final-q-e1-from-f-e2"
    assert json.loads((parent / "metrics.json").read_text())["epochs_run"] == 2
    metrics = json.loads((stage / "metrics.json").read_text())
    assert metrics["epochs_run"] == 1 and metrics["data"]["train"] == 1505
    assert f"initialised from {parent}" in (stage.parent / (stage.name + ".log")).read_text()
    final_md = (out / "final.md").read_text()
    assert "| f (parent of q) | - | 2 |" in final_md and "| q | f: `final-f-e2` | 1 |" in final_md


def test_the_realscale_table_keeps_its_runs_and_settings(tmp_path):
    import argparse

    from zoo.experiments.benchmarks import realscale

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
        Path(mine.result).write_text(json.dumps(cv_results_record(
            val=90.0 + mine.fold, **keep,
            config=trials.portable(theirs.config, theirs.run_dir))))  # as written
    vals = [(s or {}).get("val") for s in map(trials.recorded, here)]
    assert vals == [90.0] * 2 + [91.0] * 2
    assert here[1].config["init_from"].endswith("here/har2/sirnn/f/fold0")
    # The stage's parent (Trial.parent, what --final chains on) is no setting: the results files
    # written before trials named it match as they did.
    assert here[1].parent == "f" and "parent" not in trials.portable(here[1].config,
                                                                     here[1].run_dir)

    changed = trials.cv_trials("har2", "sirnn", _base(), {**variants, "f": {"lr": 0.003}}, 2,
                               tmp_path / "here", None, results=tmp_path / "results")
    assert [(s or {}).get("val") for s in map(trials.recorded, changed)] == [None, 90.0, None,
                                                                               91.0]
    elsewhere = dataclasses.replace(here[1], config={**here[1].config, "init_from": "/other/run"})
    assert trials.recorded(elsewhere) is None  # a parent outside the sweep is compared as given


def test_report_rebuilds_the_table_from_the_results_files_alone(tmp_path, monkeypatch, capsys):
    """``--report`` on a machine without the data (and no network): the trials' results files,
    written elsewhere, give the table; nothing is loaded or trained."""
    from zoo.experiments import sweep

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
    from zoo.experiments.sweep import record_plan

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

    from zoo.experiments.benchmarks import realscale

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
    stage = trials.cv_trials("har2", "sirnn", _base(), {"a": {}, "q": {"init_from": "variant:a"}},
                             2, tmp_path, None)[1]
    assert list(stage.to_dict()) == keys + ["parent"] and stage.parent == "a"
    assert trials.Trial.from_dict(json.loads(json.dumps(stage.to_dict()))) == stage
    with pytest.raises(dataclasses.FrozenInstanceError):
        cv.run_dir = "elsewhere"


def _finished_cv(todo: list, curves: dict[str, list]) -> list[dict]:
    """Results files, as another machine writes them, that make each planned CV trial count as
    finished with validation curve ``curves[variant][fold]`` (None: that fold not done); the CV
    rows they give. Nothing is trained."""
    for t in todo:
        curve = curves[t.variant][t.fold]
        if curve is None:
            continue
        Path(t.result).parent.mkdir(parents=True, exist_ok=True)
        Path(t.result).write_text(json.dumps({
            "task": t.task, "label": t.label, "variant": t.variant, "fold": t.fold,
            "folds": t.folds, "config": trials.portable(t.config, t.run_dir),
            "summary": {"val": max(curve), "curve": curve, "test": 90.0, "parameters": 163,
                        "seconds": 1.0, "epochs": len(curve), "best_epoch": len(curve)}}))
    return tables.cv_rows(todo)


def _stages(tmp_path, variants: dict, curves: dict) -> tuple[list, list[dict]]:
    todo = trials.cv_trials("har2", "sirnn", _base(), variants, 2, tmp_path / "out", None,
                            results=tmp_path / "results")
    return todo, _finished_cv(todo, curves)


QAT = {"epochs": 2, "lr": 0.001, "model_options": {"qat": "int8"}, "init_from": "variant:f"}


def test_the_final_of_a_fine_tune_stage_starts_from_its_parents_final_not_fold_0s(tmp_path):
    """The CV chooses ``q``, a QAT stage of ``f`` (``init_from: variant:f``, each fold from that
    fold's ``f`` run): its shipping retrain fine-tunes ``f``'s retrain on every subject, planned
    at ``f``'s own CV epoch, not fold 0's ``f`` run (which never saw fold 0's subjects)."""
    from zoo.experiments import sweep

    todo, rows = _stages(tmp_path, {"f": {}, "q": QAT},
                         {"f": [[80, 85, 84], [82, 86, 85]], "q": [[88, 87], [89, 88]]})
    [chain] = sweep.plan_final(todo, rows, tmp_path / "out")
    (f_row, f_final), (q_row, q_final) = chain
    assert (f_row["variant"], f_row["child"], q_row["variant"]) == ("f", "q", "q")
    assert "child" not in q_row
    assert (f_final.config["epochs"], q_final.config["epochs"]) == (2, 1)  # each its CV epoch
    assert f_final.config["init_from"] is None
    fold0 = next(t for t in todo if t.variant == "q").config["init_from"]
    assert fold0.endswith("/out/har2/sirnn/f/fold0")
    assert q_final.config["init_from"] == f_final.run_dir != fold0
    assert Path(f_final.run_dir).name == "final-f-e2"
    assert Path(q_final.run_dir).name == "final-q-e1-from-f-e2"  # another parent, another run
    assert q_final.parent == "f" and q_final.config["model_options"]["qat"] == "int8"
    assert q_final.config["task_options"]["val_fraction"] == 0.0
    table = tables.final_table(chain).splitlines()
    assert table[2].startswith("| har2 | sirnn | f (parent of q) | - | 2 | 85.50 ± 0.71 (2) |")
    assert table[3].startswith("| har2 | sirnn | q | f: `final-f-e2` | 1 | 88.50 ± 0.71 (2) |")
    # final_trial alone no longer takes fold 0's parent run without a word.
    with pytest.raises(ValueError, match=r"variant q fine-tunes each fold's run of variant f"):
        trials.final_trial(next(t for t in todo if t.variant == "q"), 1, tmp_path / "out")


def test_zoo_sweep_final_trains_the_parents_round_before_the_stages(tmp_path, monkeypatch):
    """`run_final`: one `execute` round per stage, parents first (on Ray, one Tune run after
    the other); a failed parent round leaves its stages unstarted; ``final.md`` lists both."""
    import argparse

    from zoo.experiments import sweep

    todo, rows = _stages(tmp_path, {"f": {}, "q": QAT},
                         {"f": [[80, 85], [82, 86]], "q": [[88], [89]]})
    rounds, answers = [], [0, 0]
    monkeypatch.setattr(sweep, "execute", lambda stage, args: rounds.append(
        [Path(t.run_dir).name for t in stage]) or answers.pop(0))
    args = argparse.Namespace(out=str(tmp_path / "out"), final_teacher=[])
    assert sweep.run_final(todo, rows, args) == 0
    assert rounds == [["final-f-e2"], ["final-q-e1-from-f-e2"]]
    final_md = (tmp_path / "out" / "final.md").read_text()
    assert "| f (parent of q) |" in final_md and "| q | f: `final-f-e2` |" in final_md
    rounds, answers = [], [1]
    assert sweep.run_final(todo, rows, args) == 1
    assert rounds == [["final-f-e2"]]  # q is not started from a parent that failed


def test_a_stage_of_a_stage_chains_every_final_each_at_its_cv_epoch(tmp_path):
    from zoo.experiments import sweep

    variants = {"a": {}, "b": {**QAT, "init_from": "variant:a"},
                "c": {"epochs": 3, "lr": 0.0003, "init_from": "variant:b"}}
    todo, rows = _stages(tmp_path, variants, {"a": [[80, 81, 82], [80, 81, 83]],
                                              "b": [[85, 84], [86, 85]],
                                              "c": [[87, 88, 87], [88, 89, 88]]})
    [chain] = sweep.plan_final(todo, rows, tmp_path / "out")
    names = [Path(t.run_dir).name for _, t in chain]
    assert names == ["final-a-e3", "final-b-e1-from-a-e3", "final-c-e2-from-b-e1-from-a-e3"]
    assert [t.config["init_from"] for _, t in chain] == [None, chain[0][1].run_dir,
                                                         chain[1][1].run_dir]
    assert [r.get("child") for r, _ in chain] == ["b", "c", None]


def test_a_stage_whose_parents_cv_is_not_complete_is_refused(tmp_path, capsys):
    import argparse

    from zoo.experiments import sweep

    todo, rows = _stages(tmp_path, {"f": {}, "q": QAT},
                         {"f": [[80, 85], None], "q": [[88], [89]]})
    with pytest.raises(ValueError, match=r"variant q fine-tunes variant f \(init_from "
                       r"variant:f\), whose CV has 1 of 2 folds done.*finish f's CV first"):
        sweep.plan_final(todo, rows, tmp_path / "out")
    args = argparse.Namespace(out=str(tmp_path / "out"), final_teacher=[])
    assert sweep.run_final(todo, rows, args) == 2
    assert "zoo sweep cv --final: error: variant q fine-tunes variant f" in capsys.readouterr().err
    assert not (tmp_path / "out" / "final.md").exists()


def test_a_plan_recorded_before_trials_named_their_parent_still_chains(tmp_path):
    """A ``sweep.json`` entry written before `Trial.parent` (what
    experiments/campaigns/har2_final.py reads) has only the resolved ``init_from``: the parent
    is the variant whose same-fold run that is; a run from outside the sweep is no parent."""
    todo = trials.cv_trials("har2", "sirnn", _base(), {"f": {}, "q": QAT, "x": {
        "init_from": str(tmp_path / "elsewhere")}}, 2, tmp_path / "out", None)
    old = [trials.Trial.from_dict({k: v for k, v in t.to_dict().items() if k != "parent"})
           for t in todo]
    assert [t.parent for t in todo] == [None, "f", None] * 2
    assert [t.parent for t in old] == [None] * 6
    assert [trials.parent_of(t, old) for t in old] == [None, "f", None] * 2
    f_final = trials.final_trial(old[0], 2, tmp_path / "out")
    q_final = trials.final_trial(old[1], 1, tmp_path / "out", parent=f_final)
    assert q_final.config["init_from"] == f_final.run_dir and q_final.parent == "f"
    with pytest.raises(ValueError, match=r"parent f: variant f starts from scratch"):
        trials.final_trial(old[0], 2, tmp_path / "out", parent=f_final)
    cv_parent = dataclasses.replace(f_final, fold=0)
    with pytest.raises(ValueError, match=r"a shipping retrain \(fold None\) is needed"):
        trials.final_trial(todo[1], 1, tmp_path / "out", parent=cv_parent)


def test_har2_final_keeps_its_30_plus_10_epochs_and_the_shipped_run_names(tmp_path, monkeypatch):
    """experiments/campaigns/har2_final.py, the shipped models' retrains: FLOAT for 30 epochs,
    QAT for 10 from it, in the runs the cards name, from a plan recorded before or after trials
    named their parent; a QAT variant that fine-tunes another FLOAT is refused."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "har2_final", REPO / "experiments" / "campaigns" / "har2_final.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    trained = []
    monkeypatch.setattr(script, "train_or_reuse", lambda config, run_dir, data_dir=None:
                        trained.append((Path(run_dir).name, config.epochs, config.init_from)))
    todo = trials.cv_trials("har2", "sirnn", _base(), {"f": {}, "g": {}, "q": QAT}, 2, tmp_path,
                            None)
    float_run = str(tmp_path.resolve() / "har2" / "sirnn" / "final-f-e30")
    for recorded in ([t.to_dict() for t in todo],
                     [{k: v for k, v in t.to_dict().items() if k != "parent"} for t in todo]):
        (tmp_path / "sweep.json").write_text(json.dumps({"trials": recorded}))
        trained.clear()
        script.main(str(tmp_path), "f", "q")
        assert trained == [("final-f-e30", 30, None), ("final-q-e10", 10, float_run)]
        with pytest.raises(SystemExit, match=r"variant q starts from variant f's runs, not from "
                           r"variant g's"):
            script.main(str(tmp_path), "g", "q")
    # A FLOAT that distils from per-fold teachers is refused without its retrain's teacher.
    distilled = [dataclasses.replace(t, config={**t.config, "distill": {
        "teacher": str(tmp_path / f"teacher/fold{t.fold}"), "alpha": 0.5, "temperature": 2.0}})
        if t.variant == "f" else t for t in todo]
    (tmp_path / "sweep.json").write_text(json.dumps({"trials": [t.to_dict() for t in distilled]}))
    with pytest.raises(SystemExit, match=r"har2_final.py: variant f distils.*--final-teacher"):
        script.main(str(tmp_path), "f", "q")
