"""A real export that misses the accuracy bar is written for inspection, beside ``--out`` (in
``OUT.failed``, never in ``--out`` itself), and says so: the card records the failed check and
model_card.md starts with FAILED."""

import json

import pytest

from export.exportdir import ExportDirectory


@pytest.mark.slow
def test_a_failed_export_is_kept_and_headed_failed(har_run, har_dir, tmp_path,
                                                   failing_accuracy_check):
    from export.exporter import AccuracyDropError, export_run

    out = tmp_path / "failed"
    with pytest.raises(AccuracyDropError, match="points below the Keras float model"):
        export_run(har_run, out, quantize="none", form="step", data_dir=har_dir, micro=False,
                   print_fn=lambda *a, **k: None)
    assert not out.exists()
    export = ExportDirectory(tmp_path / "failed.failed")
    assert json.loads(export.card.read_text())["accuracy"]["passed"] is False
    assert export.card_markdown.read_text().splitlines()[0].startswith("# FAILED: ")
