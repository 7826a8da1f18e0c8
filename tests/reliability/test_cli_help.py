"""Every option of every ``zoo`` subcommand says what it does in ``--help`` (issue 52: about 15
of ``zoo train``'s, --epochs, --lr, --seed, --init-from, --monitor, ... had no help text), and
the task options are listed, per task with their defaults."""

import argparse

import pytest

from edge_rnn_zoo import cli


def _within(name, parser):
    """``(name, parser)`` of ``parser`` and of each subcommand below it (``zoo sweep cv``)."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for word, sub in action.choices.items():
                yield from _within(f"{name} {word}", sub)


def _subcommand_parsers():
    for name, (module, _) in cli.SUBCOMMANDS.items():
        if module is None:
            continue
        parser = cli.build_parser(name)
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        yield from _within(name, sub.choices[name])


@pytest.mark.parametrize("name, parser", list(_subcommand_parsers()))
def test_every_option_of_every_subcommand_has_help(name, parser):
    bare = [a.option_strings[0] if a.option_strings else a.dest for a in parser._actions
            if a.help is None or (a.help != argparse.SUPPRESS and not a.help.strip())]
    assert not bare, f"zoo {name}: options without help: {bare}"


def test_zoo_list_tasks_lists_each_tasks_options_with_defaults(capsys):
    assert cli.main(["list", "tasks"]) == 0
    out = capsys.readouterr().out
    assert "task options (--task-option KEY=VALUE):" in out
    assert "test_fraction=0.0" in out and "speaker_pattern=" in out


def test_zoo_train_help_points_at_the_task_options(capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    assert "zoo list tasks" in capsys.readouterr().out
