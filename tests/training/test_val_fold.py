"""``val_fold=[k, n]``: fold k of n of the training subjects the data holds, so that one recipe
names the same validation subjects on every copy of a dataset."""

import pytest
import yaml

from zoo.training.config import RECIPES_DIR
from zoo.training.tasks import get_task
from zoo.training.tasks.base import fold_subjects

# UCI HAR's 21 official training subjects (its README) and the folds the real-scale benchmark used.
HAR_TRAIN = [1, 3, 5, 6, 7, 8, 11, 14, 15, 16, 17, 19, 21, 22, 23, 25, 26, 27, 28, 29, 30]


def test_folds_partition_the_subjects():
    folds = [fold_subjects(HAR_TRAIN, [k, 5]) for k in range(5)]
    assert sorted(s for f in folds for s in f) == HAR_TRAIN
    assert [len(f) for f in folds] == [5, 4, 4, 4, 4]
    assert folds[1] == [3, 11, 19, 26]


def test_shipped_recipes_name_the_pretrained_models_validation_subjects():
    """har2-sirnn.yaml and dsa19-sirnn.yaml reproduce the splits of the pretrained runs trained
    with a validation subject fold (generation 1; generation 2 trained on every subject)."""
    import zoo
    from zoo.pretrained import archive_root

    for task, tag, subjects in (("har2", "sirnn.har2_gen1", HAR_TRAIN),
                                ("dsa19", "sirnn.dsa19_gen1", [1, 2, 3, 4])):
        recipe = yaml.safe_load((RECIPES_DIR / f"{task}-sirnn.yaml").read_text())
        card = zoo.get_pretrained_cfg(tag, root=archive_root())
        assert fold_subjects(subjects, recipe["task_options"]["val_fold"]) == \
            card.data.task_options["val_subjects"]
        assert recipe["seed"] == card.data.seed


def test_val_fold_on_the_subsets(shared_data):
    har = get_task("har2", val_fold=[1, 5]).load(shared_data / "har")
    assert har.info["val_subjects"] == [3]  # the subset holds training subjects 1, 3, 21, 25
    dsa = get_task("dsa19", val_fold=[2, 4]).load(shared_data / "dsa19")
    assert dsa.info["val_subjects"] == [3]
    explicit = get_task("har2", val_subjects=[1], val_fold=[1, 5]).load(shared_data / "har")
    assert explicit.info["val_subjects"] == [1]  # val_subjects wins


@pytest.mark.parametrize("fold,match", [
    ([5, 5], r"must be \[k, n\]"), ([0, 1], r"must be \[k, n\]"), ("1/5", r"must be \[k, n\]"),
    ([1.0, 5], r"must be \[k, n\]"),
])
def test_bad_folds_are_refused(fold, match):
    with pytest.raises(ValueError, match=match):
        get_task("har2", val_fold=fold)


def test_a_fold_that_holds_out_nobody_is_refused(shared_data):
    with pytest.raises(ValueError, match=r"holds out no subject of the training subjects \[1, 3, 21, 25\]"):
        get_task("har2", val_fold=[4, 5]).load(shared_data / "har")
