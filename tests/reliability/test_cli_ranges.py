"""The numeric-flag probe harness (issue 32: "every numeric flag has a valid range checked before
work starts", kept so that the next campaign starts from it).

* Every numeric flag of every ``zoo`` subcommand and ``zoo bench`` / ``zoo device`` study is
  found by building the command's own parser (`_parser_of`), and each value just outside its
  range is given to the command: exit 2, the last line names the flag and what is valid, no
  traceback, nothing written.
* A static scan: no ``add_argument(..., type=int)`` or ``type=float`` left in the command-line
  and experiment modules (a plain ``int`` takes -1, 0 and 10**9 alike).
* The cases a range in the parser cannot see: model options' ranges, ``zoo sweep --set`` names
  and values, ``--folds`` against the data's subjects, trial resources against the machine,
  an ``--out`` through a dangling symlink.

In-process (``edge_rnn_zoo.cli.main``); no training runs, Ray never starts.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from edge_rnn_zoo.cli import main

REPO = Path(__file__).resolve().parents[2]

# Each command as typed, up to where the flags go (RUN: a positional the parser needs).
COMMANDS = [
    ["analyze", "RUN"], ["sweep", "cv", "--task", "har2", "--model", "sirnn"],
    ["sweep", "realscale"], ["bench"], ["bench", "realscale"], ["bench", "accuracy"],
    ["bench", "throughput"], ["bench", "collapse-trace"], ["bench", "kws"],
    ["bench", "kws-table"], ["bench", "c-backend"], ["bench", "sequence-int8"],
    ["bench", "lengths", "RUN"], ["device", "latency"],
    ["device", "build", "EXPORT", "--tflm", "TFLM"],
]


class _Captured(Exception):
    def __init__(self, parser):
        super().__init__()
        self.parser = parser


def _parser_of(command, monkeypatch) -> argparse.ArgumentParser:
    """The parser that reads ``command``'s flags: the command is run with ``parse_args``
    replaced, so it stops at its parser, before any work."""
    def capture(self, args=None, namespace=None):
        raise _Captured(self)

    with monkeypatch.context() as m:
        m.setattr(argparse.ArgumentParser, "parse_args", capture)
        with pytest.raises(_Captured) as got:
            main(list(command))
    parser = got.value.parser
    for word in [w for w in command if not w.startswith("-")]:  # down the subcommands
        sub = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not sub or word not in sub[0].choices:
            continue
        parser = sub[0].choices[word]
    return parser


def _outside(valid_range) -> list[str]:
    """Values just outside ``(kind, low, high, low_open)``, and what is never valid."""
    kind, low, high, low_open = valid_range
    values = ["x"]
    if kind == "int":
        values += [str(low - 1)] if low is not None else []
        values += [str(high + 1)] if high is not None else []
        return values + ["1.5"]
    values += ["nan", "inf"]
    if low is not None:
        values.append(f"{low:g}" if low_open else f"{low - 1:g}")
    if high is not None:
        values.append(f"{high + 1:g}")
    return values


def _ranged_flags(parser):
    return [(a.option_strings[-1], a.type) for a in parser._actions
            if a.option_strings and hasattr(a.type, "valid_range")]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_numeric_flag_refuses_values_outside_its_range(command, tmp_path, monkeypatch,
                                                             capsys):
    monkeypatch.chdir(tmp_path)
    flags = _ranged_flags(_parser_of(command, monkeypatch))
    assert flags, f"{' '.join(command)}: no ranged flag found"
    wrong = []
    for flag, kind in flags:
        for value in _outside(kind.valid_range):
            with pytest.raises(SystemExit) as exc:
                main([*command, f"{flag}={value}"])
            err = capsys.readouterr().err.strip()
            last = err.splitlines()[-1] if err else ""
            if (exc.value.code != 2 or "Traceback" in err or f"argument {flag}" not in last
                    or kind.__name__ not in last):
                wrong.append(f"{flag}={value}: exit {exc.value.code}, {last!r}")
    assert not wrong, wrong
    assert list(tmp_path.iterdir()) == []


def _numeric_types(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            for kw in node.keywords:
                if kw.arg == "type" and isinstance(kw.value, ast.Name) \
                        and kw.value.id in ("int", "float"):
                    yield node.lineno, kw.value.id


def test_no_numeric_flag_without_a_range():
    """A new flag typed ``int`` or ``float`` fails here: use zoo.core.flags' int_in / number_in
    (or, for a TrainConfig / ExportOptions setting, strict_int / strict_float and that rule).
    export/device_bench.py runs on a device without the zoo and parses for itself;
    export/device_build.py (`zoo device build`) is the zoo's and is scanned."""
    paths = [path for folder in ("edge_rnn_zoo", "experiments")
             for path in (REPO / folder).rglob("*.py")]
    found = [f"{path.relative_to(REPO)}:{line}: type={name}"
             for path in [*paths, REPO / "export" / "device_build.py"]
             for line, name in _numeric_types(path)]
    assert not found, found


# ----------------------------------------------------------------- what a parser cannot see
def _one_line(capsys, argv, words):
    code = main(list(argv))
    err = capsys.readouterr().err.strip()
    assert code == 2, (code, err)
    assert len(err.splitlines()) == 1 and ": error: " in err and "Traceback" not in err, err
    for word in words:
        assert word in err, (word, err)
    return err


TRAIN = ["train", "--task", "har2", "--model", "irnn", "--recipe", "none", "--epochs", "1"]
MODEL_OPTIONS = [
    (["--units", "1000000000"], ["units (--units)", "1000000000", "1..4096"]),
    (["--units", "0"], ["units (--units)", "1..4096"]),
    (["--k", "0"], ["k (--k)", "1..100"]),
    (["--rank", "-2"], ["rank (--rank)", "1..4096"]),
    (["--option", "dropout=1.5"], ["dropout (--option dropout=...)", "[0, 1)"]),
    (["--option", "recurrent_dropout=-0.1"], ["recurrent_dropout", "[0, 1)"]),
]


@pytest.mark.parametrize("extra,words", MODEL_OPTIONS, ids=[" ".join(e) for e, _ in MODEL_OPTIONS])
def test_model_option_out_of_range_is_refused_before_training(extra, words, tmp_path, capsys):
    """--units 1000000000 was an out-of-memory traceback after the data had loaded."""
    out = tmp_path / "run"
    _one_line(capsys, [*TRAIN, *extra, "--out", str(out)], words)
    assert list(tmp_path.iterdir()) == []


TASK_OPTIONS = [
    (["--task", "adding", "--task-option", "n_train=1000000000000"],
     ["task adding", "n_train, n_val, n_test and timesteps", "1,000,000,002,000 sequences",
      "at most 4 GiB"]),
    (["--task", "copy", "--task-option", "timesteps=1000000000"],
     ["task copy", "1,000,000,020 x 10", "at most 4 GiB"]),
    (["--task", "parity", "--task-option", "n_train=100000000"],
     ["task parity", "n_train, n_val, n_test and max_length"]),
    (["--task", "adding", "--task-option", "n_train=0"], ["option n_train", ">= 1", "got 0"]),
    (["--task", "tomita1", "--task-option", "n_train=0"], ["option n_train", ">= 1", "got 0"]),
]


@pytest.mark.parametrize("extra,words", TASK_OPTIONS, ids=[" ".join(e) for e, _ in TASK_OPTIONS])
def test_generated_task_that_cannot_be_made_or_trained_is_refused(extra, words, tmp_path,
                                                                   capsys):
    """A generated task is made in memory: n_train=10**12 was a MemoryError traceback (1.4 PiB);
    n_train=0 reached model.fit with no batch (Keras's "empty generator" after the data was
    made, or with a huge --epochs a generator looping through empty epochs for ever)."""
    argv = ["train", "--model", "lstm", "--units", "3", "--recipe", "none", "--epochs", "1",
            *extra, "--out", str(tmp_path / "run")]
    _one_line(capsys, argv, words)
    assert list(tmp_path.iterdir()) == []


def test_empty_training_split_is_refused_not_waited_on(tiny_config, tmp_path, monkeypatch):
    """Whatever the task: no training sequence is one line, and the new run directory goes."""
    from zoo.training.tasks import synthetic
    from zoo.training.tasks.base import Split
    from zoo.training.trainer import train

    real_load = synthetic.Adding._load

    def no_training_sequence(self, data_dir, *, seed):
        data = real_load(self, data_dir, seed=seed)
        data.train = Split(data.train.x[:0], data.train.y[:0])
        return data

    monkeypatch.setattr(synthetic.Adding, "_load", no_training_sequence)
    with pytest.raises(ValueError, match=r"task adding: the training split of generated .* is "
                                         r"empty; nothing to train on"):
        train(tiny_config(), tmp_path / "run", verbose=0)
    assert not (tmp_path / "run").exists()  # (its lock file stays, as after any run)


SWEEP = ["sweep", "cv", "--task", "har2", "--model", "sirnn", "--dry-run"]
SWEEP_CASES = [
    (["--set", "lr=nan"], ["lr (--set lr=...)", "'nan'", "a number > 0"]),
    (["--set", "bogus=1"], ["--set: unknown training setting(s) bogus", "valid:", "epochs"]),
    (["--set", "epochs=0"], ["epochs (--set epochs=...)", ">= 1"]),
    (["--set", "batch_size=-4"], ["batch_size (--set batch_size=...)", ">= 1"]),
    (["--option", "units=0"], ["units (--option units=...)", "1..4096"]),
    (["--variant", 'big={"model_options": {"units": 100000}}'],
     ["units (--variant big: model_options: units=...)", "1..4096"]),
    (["--option", "bogus=1"], ["unknown option(s) 'bogus'", "sirnn"]),
    (["--variant", 'fast={"lr": -1}'], ["--variant fast:", "lr", "a number > 0"]),
    (["--num-cpus", "2", "--cpus-per-trial", "3"], ["--cpus-per-trial 3", "--num-cpus 2"]),
    (["--num-gpus", "1", "--gpus-per-trial", "2"], ["--gpus-per-trial 2", "--num-gpus 1"]),
    (["--gpus-per-trial", "1.5"], ["--gpus-per-trial 1.5", "<= 1"]),
]


@pytest.mark.parametrize("extra,words", SWEEP_CASES, ids=[" ".join(e) for e, _ in SWEEP_CASES])
def test_sweep_setting_no_trial_could_use_is_refused_before_ray(extra, words, capsys):
    """`--set lr=nan` and `--set bogus=1` were tracebacks; a trial asking for more CPUs or GPUs
    than Ray has waited for ever."""
    _one_line(capsys, [*SWEEP, *extra], words)


def test_sweep_set_uses_the_train_parser(capsys):
    """One KEY=VALUE parser for `zoo train --option` and `zoo sweep --set`: its guards apply."""
    for argv in ([*SWEEP, "--set", "epochs=1_000"], [*SWEEP, "--set", "lr=.nan"],
                 [*SWEEP, "--set", "=3"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2 and "argument --set" in capsys.readouterr().err


def test_sweep_folds_beyond_the_subjects_are_refused(shared_data, capsys):
    """The shared HAR subset holds 4 training subjects: `--folds 1000` passed --dry-run, and
    every fold past the 4th would have held out nobody and failed on Ray."""
    data = str(shared_data / "har")
    _one_line(capsys, [*SWEEP, "--folds", "5", "--data-dir", data],
              ["--folds 5", "holds 4 subjects", "at most 4 folds"])
    assert main([*SWEEP, "--folds", "4", "--data-dir", data]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and lines[-1].endswith("fold3")


def test_sweep_dry_run_without_the_data_says_the_folds_went_unchecked(tmp_path, capsys):
    """A dry run downloads nothing (the session's data root is empty and offline): it says the
    folds were not checked; a --data-dir that does not exist is an error, as in training."""
    assert main([*SWEEP, "--folds", "1000"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("--folds 1000 not checked against the data: ") and "fold999" in out
    _one_line(capsys, [*SWEEP, "--data-dir", str(tmp_path / "missing")],
              ["--data-dir", "missing", "no such file or folder"])


def test_sweep_epochs_zero_is_not_the_recipes(capsys):
    """`--epochs 0` planned the recipe's epoch count without a word."""
    with pytest.raises(SystemExit) as exc:
        main([*SWEEP, "--epochs", "0"])
    assert exc.value.code == 2 and "'0': expected an integer >= 1" in capsys.readouterr().err


@pytest.mark.parametrize("command", [TRAIN, ["export", "RUN"], ["analyze", "RUN"], SWEEP[:-1]],
                         ids=["train", "export", "analyze", "sweep"])
def test_out_through_a_dangling_symlink_is_refused(command, tmp_path, capsys):
    """The symlink's target and its parents were created, somewhere the user never named."""
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere" / "deeper")
    for out in (link, link / "run"):
        _one_line(capsys, [*command, "--out", str(out)], [str(link), "does not exist"])
    assert not (tmp_path / "nowhere").exists()


def test_ranges_read_as_documented():
    """The range helpers against their wording (what every message above quotes)."""
    from zoo.core.flags import int_in, number_in

    assert int_in(1)("3") == 3 and int_in(0, 16)("16") == 16
    assert number_in(0, 1, low_open=True)("1") == 1.0
    for parse, text in ((int_in(1), "0"), (int_in(0, 16), "17"), (number_in(0, low_open=True), "0"),
                        (number_in(0), "-1e-9"), (number_in(0), "nan")):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)
    assert int_in(1, 4096).__name__ == "an integer in 1..4096"
    assert number_in(0, 1, low_open=True).__name__ == "a number in (0, 1]"
