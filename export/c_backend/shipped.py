"""A shipped tag (models/pretrained/TAG: ``card.json`` beside ``export-step-int8/``) as the source
of a C export: its card read (`tag_card`), its export's shape checked against it, and its test
windows taken from the task's data when the data is on disk (`test_windows`), so that the C code
of a shipped tag is checked against its models as a run's is. Nothing is downloaded here: the
shipped folder holds no test set, and fetching a dataset to check a C file is not what a user
asked for.
"""

from __future__ import annotations

import os
from unittest import mock
from pathlib import Path

import numpy as np

from zoo.export.c_backend.project import CExportError
from zoo.export.card_schema import CARD_FILE, ModelCard
from zoo.pretrained_card import CARD as TAG_CARD
from zoo.pretrained_card import PretrainedCfg, PretrainedError, read_tag_card


def tag_card(source: Path) -> PretrainedCfg | None:
    """The shipped tag's card in ``source`` (`zoo.pretrained_card.read_tag_card`, under any folder
    name), or None when ``source`` is not a tag folder; a damaged one is a `CExportError`."""
    path = Path(source) / TAG_CARD
    if not path.is_file():
        return None
    try:
        return read_tag_card(path, folder_is_tag=False)
    except PretrainedError as err:
        raise CExportError(f"{err} (the shipped tag's card is damaged)") from None


def check_against_tag(tag: PretrainedCfg, card: ModelCard, source: Path) -> None:
    """The step export's ``timesteps`` and ``features`` must be the tag's model input (its
    ``input_shape`` at its ``frames_per_step``)."""
    shape = (card.timesteps, card.features)
    if tag.model_input_shape != shape:
        frames = (f" at frames_per_step {tag.frames_per_step}, {tag.model_input_shape}"
                  if tag.frames_per_step > 1 else "")
        raise CExportError(f"{source / tag.export.folder / CARD_FILE}: timesteps x features is "
                           f"{shape[0]} x {shape[1]}, but {source / TAG_CARD} says input_shape "
                           f"{list(tag.input_shape)}{frames}")


def test_windows(card: ModelCard, normalization: tuple, data_dir=None, checked="the C code"):
    """(x, y, reason): the test windows of ``card.task`` from the data on disk (``data_dir``, or
    where the zoo looks by default), normalized with the tag's ``normalization`` (mean, std), as
    the export's own test set would be, and their labels; or (None, None, why not) when the data
    is not at hand. The task is built with the card's own options (a front end, the training
    subjects: what decides the test split and the features) but no validation subjects (they
    may not exist in a partial copy, and do not change the test split); partial copies of a
    dataset are accepted: every window checks the C code. ``checked``: what the windows would
    check, as the reason names it (``zoo device build`` checks the C++ loop)."""
    from zoo.training.data.errors import DataError, DataNotFoundError
    from zoo.training.data.paths import OFFLINE_ENV
    from zoo.training.tasks import get_task

    try:
        # no download inside (`zoo.training.data.paths.offline` reads ZOO_OFFLINE)
        with mock.patch.dict(os.environ, {OFFLINE_ENV: "1"}):
            data = get_task(card.task, **_test_options(card)).load(data_dir, seed=0)
    except (DataNotFoundError, DataError) as err:  # what is missing and how to get it
        found = " ".join(str(err).split())
        if data_dir is not None:  # the user named the data: no advice to pass it
            return None, None, (f"the {card.task} data is not at hand in --data-dir {data_dir}: "
                                f"{found}")
        return None, None, (f"pass --data-dir to check {checked} on the {card.task} test "
                            f"windows; the data is not at hand: {found}")
    if tuple(data.test.x.shape[1:]) != (card.timesteps, card.features):
        return None, None, (f"the {card.task} test windows here are {data.test.x.shape[1:]}, "
                            f"the export takes ({card.timesteps}, {card.features})")
    mean, std = normalization
    # A task's windows are raw (the run's normalization is applied by its model, or here).
    return ((data.test.x - mean) / std).astype(np.float32), data.test.y.astype(np.int64), None


def _test_options(card: ModelCard) -> dict:
    """The card's task options that the task knows, without validation subjects."""
    from zoo.training.tasks import get_task

    known = get_task(card.task).options()
    options = {k: v for k, v in (card.task_options or {}).items() if k in known}
    for key, none in (("val_subjects", None), ("val_fold", None), ("val_fraction", 0.0),
                      ("allow_partial", True)):
        if key in known:
            options[key] = none
    return options
