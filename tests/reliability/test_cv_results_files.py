"""``zoo sweep cv``'s results files (``fold<k>.json``) read through their one typed record,
`zoo.core.cv_results.CvResult`: every file the campaigns committed reads and writes back as it
is, and a damaged one is one line naming the file and the key, from each of its readers (the
sweep's `recorded`, ``zoo ship --cv-results``, the paired comparison, the frontier)."""

import json
from pathlib import Path

import pytest

from tests.conftest import cv_results_record
from zoo.core.cv_results import CvResult, CvResultError, read_cv_result

REPO = Path(__file__).resolve().parents[2]


def _committed_results_files() -> list[Path]:
    """The CV results files under results/ (the fold-int8 ones, another format, left out)."""
    return [p for p in sorted((REPO / "results").glob("*/*/*/*/fold*.json"))
            if "summary" in json.loads(p.read_text())]


def test_every_committed_results_file_reads_and_writes_back_as_it_is():
    files = _committed_results_files()
    assert len(files) > 100, "the campaigns' committed results files"
    for path in files:
        data = json.loads(path.read_text())
        result = read_cv_result(path)
        assert result.to_dict() == data, path
        assert (result.fold, result.summary.val) == (data["fold"], data["summary"]["val"])


def test_unknown_keys_are_kept_and_written_back(tmp_path):
    data = cv_results_record(2, 91.5, note="by hand")
    data["summary"]["int8_val"] = 91.0
    path = tmp_path / "fold2.json"
    path.write_text(json.dumps(data))
    result = read_cv_result(path)
    assert result.extra == {"note": "by hand"} and result.summary.extra == {"int8_val": 91.0}
    assert result.to_dict() == data and result.path == path


@pytest.mark.parametrize("damage, key", [
    (lambda d: d.pop("label"), "no label"),
    (lambda d: d["summary"].pop("val"), "no summary.val"),
    (lambda d: d.update(fold="one"), "fold is 'one'; valid: an integer >= 0"),
    (lambda d: d["summary"].update(curve=[90.0, "x"]), "summary.curve is [90.0, 'x']"),
    (lambda d: d.update(config=None), "config is None; valid: a mapping"),
    (lambda d: d.update(summary=[1, 2]), "summary is [1, 2]; valid: a mapping"),
])
def test_a_damaged_file_is_one_line_naming_it_and_the_key(tmp_path, damage, key):
    data = cv_results_record()
    damage(data)
    path = tmp_path / "fold0.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CvResultError) as err:
        read_cv_result(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and key in message and "\n" not in message


def test_a_file_that_is_not_json_or_not_an_object_is_named(tmp_path):
    path = tmp_path / "fold0.json"
    path.write_text("{half")
    with pytest.raises(CvResultError, match=r"fold0.json: not a zoo sweep cv results file \(JSON"):
        read_cv_result(path)
    path.write_text("[1, 2]")
    with pytest.raises(CvResultError, match=r"fold0.json: .*a JSON list, expected an object"):
        read_cv_result(path)
    with pytest.raises(CvResultError, match="results record: not a zoo sweep cv results file: no task"):
        CvResult.from_dict({})


@pytest.fixture
def damaged(tmp_path) -> Path:
    """results/har2/sirnn/v/ with fold 0 whole and fold 1 without its summary.test."""
    folder = tmp_path / "results" / "har2" / "sirnn" / "v"
    folder.mkdir(parents=True)
    (folder / "fold0.json").write_text(json.dumps(cv_results_record(0)))
    broken = cv_results_record(1)
    del broken["summary"]["test"]
    (folder / "fold1.json").write_text(json.dumps(broken))
    return folder


def test_each_reader_names_the_damaged_file_and_key(damaged, capsys):
    from zoo.experiments import frontier, trials
    from zoo.experiments.campaigns import paired
    from zoo.export.ship import cv_summaries

    expected = f"{damaged / 'fold1.json'}: not a zoo sweep cv results file: no summary.test"
    with pytest.raises(ValueError) as err:
        cv_summaries(damaged)
    assert str(err.value).startswith(expected)
    with pytest.raises(ValueError) as err:
        frontier.cv_by_graph([damaged.parents[2]], "har2")
    assert str(err.value).startswith(expected)
    with pytest.raises(SystemExit) as exit_:
        paired.main([str(damaged.parents[2]), "har2", "sirnn/v:sirnn/v"])
    assert str(exit_.value.code).startswith(expected)
    trial = trials.Trial(task="har2", label="sirnn", variant="v", fold=1, folds=5, config={},
                         run_dir=str(damaged.parents[2] / "out" / "fold1"),
                         result=str(damaged / "fold1.json"))
    with pytest.raises(ValueError) as err:
        trials.recorded(trial)
    assert str(err.value).startswith(expected)


def test_ship_refuses_a_fold_without_a_test_accuracy_by_name(tmp_path):
    from zoo.export.ship import cv_summaries

    data = cv_results_record(0)
    data["summary"]["test"] = None  # a run without a test split: valid, but no tag's CV
    (tmp_path / "fold0.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"fold0.json: summary.test is null"):
        cv_summaries(tmp_path)


def test_zoo_sweep_report_names_a_damaged_results_file_in_one_line(tmp_path, monkeypatch,
                                                                   capsys):
    """``zoo sweep cv --report`` rebuilds its table from the results files alone: one that was
    damaged (here: its validation curve gone) stops it with one line, not a traceback."""
    from zoo.experiments import sweep, trials

    results = tmp_path / "results"
    base = trials.base_config("har2", "sirnn", None, {"epochs": 3,
                                                      "model_options": {"units": 8, "rank": 4}})
    planned = trials.cv_trials("har2", "sirnn", base, {"base": {}}, 2, tmp_path / "out", None,
                               results=results)
    for t in planned:
        data = cv_results_record(t.fold, 91.0, variant="base", folds=2,
                                 config=trials.portable(t.config, t.run_dir))
        if t.fold == 1:
            del data["summary"]["curve"]
        Path(t.result).parent.mkdir(parents=True, exist_ok=True)
        Path(t.result).write_text(json.dumps(data))
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data-here"))
    monkeypatch.setenv("ZOO_OFFLINE", "1")
    code = sweep.main(["cv", "--task", "har2", "--model", "sirnn", "--folds", "2", "--epochs", "3",
                       "--option", "units=8", "--option", "rank=4", "--out", str(tmp_path / "out"),
                       "--results", str(results), "--report"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "Traceback" not in err, err
    assert err == (f"zoo sweep cv: error: {planned[1].result}: not a zoo sweep cv results file: "
                   "no summary.curve (a list of numbers (% per epoch))")
