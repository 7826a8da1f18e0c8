"""Issue 44, item 4's probes: tracebacks become one-line errors, checked before anything is
written, and a listing names only what it lists.

``zoo bench frontier`` raised tracebacks for a missing or invalid device JSON and for a ``--doc``
that is a folder or in a missing folder (the latter after the plot was written; and a ``--plot``
that is a folder was written as ``FOLDER.png``); ``zoo bench qat-points TAG`` without
``--data-dir`` raised after trying to download; ``StreamReference.run`` on fewer samples than a
frame raised NumPy's zero-size reduction error; ``zoo ship --repack`` after a killed ship listed
the staging folder among the shipped tags.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from zoo.experiments import frontier

REPO = Path(__file__).resolve().parents[2]
VARIANT = {"model": "sirnn", "model_options": {"units": 8}, "source": "runs/x",
           "step_ops": {"count": 3, "histogram": {"ADD": 3}}, "const_bytes": 100,
           "cortex_m4_instructions_per_step_O2": 1000.0, "cortex_m4_flash_bytes_Os": 2000}


def _one_line_error(capsys, code):
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and ": error: " in err, err
    return err


@pytest.fixture
def inputs(tmp_path):
    """A valid device JSON, an empty results folder, the doc and plot paths."""
    device = tmp_path / "device.json"
    device.write_text(json.dumps({"variants": {"v": VARIANT}, "toolchain": {"cc": "gcc"}}))
    (tmp_path / "results").mkdir()
    return device, tmp_path / "results"


def _frontier(device, results, doc, plot):
    return frontier.main(["--device", str(device), "--results", str(results), "--int8-results",
                          "--doc", str(doc), "--plot", str(plot)])


@pytest.mark.parametrize("device_text, words", [
    (None, "no device JSON"),
    ("{not json", "not a device JSON (JSON error"),
    ("[]", "expected an object with 'variants'"),
    ('{"variants": {"v": 5}}', "variant 'v': expected an object of figures"),
    ('{"variants": {"v": {"model": "nope"}}}', "variant 'v': unknown model 'nope'"),
    (json.dumps({"variants": {"v": {**VARIANT, "cortex_m4_flash_bytes_Os": "big"}}}),
     "cortex_m4_flash_bytes_Os must be a number"),
    (json.dumps({"variants": {"v": {**VARIANT, "step_ops": None}}}), "needs 'source' and "
     "'step_ops'")])
def test_a_bad_device_json_is_one_line_and_nothing_is_written(device_text, words, inputs,
                                                              tmp_path, capsys):
    device, results = inputs
    device.unlink()
    if device_text is not None:
        device.write_text(device_text)
    code = _frontier(device, results, tmp_path / "doc.md", tmp_path / "img" / "f.png")
    assert words in _one_line_error(capsys, code)
    assert not (tmp_path / "doc.md").exists() and not (tmp_path / "img").exists()


@pytest.mark.parametrize("doc, plot, words", [
    ("out", "f.png", "--doc {t}/out is a folder"),
    ("doc.md", "out", "--plot {t}/out is a folder"),
    ("a-file/doc.md", "f.png", "{t}/a-file is a file, not a folder"),
    ("doc.md", "f", "--plot {t}/f: name an image file"),
    ("doc.md", "f.xyz", "--plot {t}/f.xyz: name an image file")])
def test_a_doc_or_plot_that_cannot_be_written_is_refused_before_the_plot(
        doc, plot, words, inputs, tmp_path, capsys):
    device, results = inputs
    (tmp_path / "out").mkdir()
    (tmp_path / "a-file").write_text("mine\n")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    code = _frontier(device, results, tmp_path / doc, tmp_path / plot)
    assert words.format(t=tmp_path) in _one_line_error(capsys, code)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # no plot, no doc, no folder


def test_a_doc_in_a_missing_folder_links_the_plot_wherever_it_is(inputs, tmp_path, capsys):
    device, results = inputs
    for fold in range(2):  # CV results of the device variant's graph: a point is plotted
        path = results / "har2" / "sirnn" / "v" / f"fold{fold}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({
            "task": "har2", "label": "sirnn", "variant": "v", "fold": fold, "folds": 2,
            "config": {"task": "har2", "model": "sirnn", "model_options": {"units": 8}},
            "summary": {"val": 90.0, "curve": [85.0, 90.0], "test": 90.0, "parameters": 100,
                        "seconds": 1.0, "epochs": 2, "best_epoch": 2}}))
    doc, plot = tmp_path / "docs" / "new" / "frontier.md", tmp_path / "img" / "frontier.png"
    assert _frontier(device, results, doc, plot) == 0, capsys.readouterr().err
    assert plot.read_bytes()[:4] == b"\x89PNG"
    assert "![frontier](../../img/frontier.png)" in doc.read_text()


def test_qat_points_without_data_says_so_in_one_line(capsys):
    """The shipped tag records where its data was on the machine that trained it; here the
    data is nowhere (an empty data root, downloads off: the test session's), as `zoo export`
    then says in one line."""
    from zoo.experiments import qat_points
    from zoo.pretrained import verified_dir

    code = qat_points.main([str(verified_dir("sirnn.har2"))])
    err = _one_line_error(capsys, code)
    assert err.startswith("zoo bench qat-points: error: ") and "not found in" in err, err


def test_a_stream_shorter_than_a_frame_has_no_hops():
    """Fewer than 400 samples make no frame (`stream_frames`, as the C app's push): no logits,
    no posteriors, no detections, in the shapes a longer stream has."""
    from zoo.export.kws_stream import Recognizer, StreamReference

    ref = StreamReference(REPO / "models/archive/sirnn.google12_testset/export-step-int8")
    longer = ref.run(np.zeros(400, np.int16), Recognizer())
    for n in (0, 1, 399):
        logits, post, detections = ref.run(np.zeros(n, np.int16), Recognizer())
        assert logits.shape == post.shape == (0, longer[0].shape[1]) and detections == []


def test_repack_lists_only_shipped_tags_not_a_killed_ships_staging(tmp_path, capsys):
    from zoo.export import ship

    for folder in ("sirnn.har2", ".sirnn.har2.partial-4242", ".gru.har2.old"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "card.json").write_text(json.dumps({"tag": "sirnn.har2"}))
    code = ship.main(["--repack", "--tag", "lstm.har2", "--dest", str(tmp_path)])
    err = _one_line_error(capsys, code)
    assert err.endswith(f"shipped in {tmp_path}: sirnn.har2"), err
