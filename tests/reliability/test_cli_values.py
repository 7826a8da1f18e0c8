"""Every bad `zoo train` value the adversarial pass found (issue 14) is refused before anything
is written, with one line that names the option and what is valid. In-process (``edge_rnn_zoo.cli.main``)
so that the whole table costs about a second; no training runs."""

import pytest
import yaml

from edge_rnn_zoo.cli import main

BASE = ["train", "--task", "har2", "--model", "irnn", "--recipe", "none", "--epochs", "1"]

# (extra arguments, words the error must contain: the option, and what is valid)
BAD = [
    (["--lr", "-1"], ["lr (--lr)", "-1", "> 0"]),
    (["--lr", "0"], ["lr (--lr)", "> 0"]),
    (["--lr", "nan"], ["lr (--lr)", "> 0"]),
    (["--lr-decay-epochs", "-1"], ["lr_decay_epochs (--lr-decay-epochs)", ">= 1"]),
    (["--lr-decay-epochs", "0"], ["lr_decay_epochs (--lr-decay-epochs)", ">= 1"]),
    (["--lr-decay-factor", "10"], ["lr_decay_factor", "(0, 1]"]),
    (["--clipnorm", "-1"], ["clipnorm (--clipnorm)", "> 0"]),
    (["--patience", "-1"], ["early_stopping_patience (--patience)", ">= 0"]),
    (["--epochs", "0"], ["epochs (--epochs)", ">= 1"]),
    (["--epochs", "-1"], ["epochs (--epochs)", ">= 1"]),
    (["--batch-size", "0"], ["batch_size (--batch-size)", ">= 1"]),
    (["--batch-size", "-1"], ["batch_size (--batch-size)", ">= 1"]),
    (["--seed", "-3"], ["seed (--seed)", ">= 0"]),
    (["--option", "state_clip=abc"], ["state_clip", "'abc'", "a number > 0"]),
    (["--option", "alpha=abc"], ["alpha", "'abc'", "a number"]),
    (["--option", "units=abc"], ["units", "'abc'", "an integer"]),
    (["--option", "k=1.5"], ["option k", "1.5", "an integer"]),
    (["--task-option", "val_subjects=5"], ["val_subjects", "list of subject numbers"]),
    (["--task-option", "split_seed=abc"], ["split_seed", "integer >= 0"]),
    (["--monitor", "bogus"], ["monitor (--monitor)", "val_loss"]),
    (["--monitor", "val_mae"], ["--monitor 'val_mae'", "har2", "val_accuracy"]),
    (["--optimizer", "adamw"], ["optimizer (--optimizer)", "rmsprop"]),
    (["--distill", "teacher=runs/t", "--distill", "alpha=1.5"],
     ["distill option alpha (--distill alpha=...)", "1.5", "[0, 1]"]),
    (["--distill", "teacher=runs/t", "--distill", "temperature=0"],
     ["distill option temperature", "> 0"]),
    (["--distill", "alpha=0.5"], ["distill: no teacher", "--distill teacher=RUN_DIR"]),
    (["--distill", "teacher=no/such/run"], ["distill teacher no/such/run", "no such directory"]),
]


@pytest.mark.parametrize("extra,words", BAD, ids=[" ".join(e) for e, _ in BAD])
def test_bad_value_is_one_clear_line_and_nothing_is_written(extra, words, tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*BASE, *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("zoo train: error: "), err
    for word in words:
        assert word in err, (word, err)
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flag,value", [("--epochs", "1_000"), ("--units", "1_0"),
                                        ("--lr", "1_0.5"), ("--epochs", "ten")])
def test_numbers_with_separators_or_words_are_refused_by_the_parser(flag, value, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*BASE, flag, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and repr(value) in err


def test_option_value_with_underscore_separator_is_refused(capsys):
    with pytest.raises(SystemExit):
        main([*BASE, "--option", "units=1_000"])
    assert "units=1_000" in capsys.readouterr().err


def test_the_same_checks_apply_to_a_recipe(tmp_path, capsys):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({"lr": -1.0, "epochs": 3}))
    args = ["train", "--task", "har2", "--model", "irnn", "--recipe", str(recipe),
            "--out", str(tmp_path / "run")]
    assert main(args) == 2
    assert "lr (--lr): -1.0; valid: a number > 0" in capsys.readouterr().err
    recipe.write_text(yaml.safe_dump({"model_options": [1, 2]}))
    assert main(args) == 2
    assert "model_options must be a mapping" in capsys.readouterr().err


def test_out_that_is_a_file_is_refused(tmp_path, capsys, shared_data):
    out = tmp_path / "notes.txt"
    out.write_text("mine")
    assert main([*BASE, "--data-dir", str(shared_data / "har"), "--out", str(out)]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    assert out.read_text() == "mine"


def test_user_config_yaml_that_is_a_list_is_refused(tmp_path, capsys, shared_data):
    out = tmp_path / "run"
    out.mkdir()
    (out / "config.yaml").write_text("- a\n- b\n")
    assert main([*BASE, "--data-dir", str(shared_data / "har"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "config.yaml is not a zoo run config" in err and "list" in err
    assert sorted(p.name for p in out.iterdir()) == ["config.yaml"]
