"""`zoo.experiments.kws_bench`'s table row from the cards of a model's exports (hand-made cards and runs;
no export, no timing)."""

import json
from types import SimpleNamespace

from zoo.experiments import kws_bench
from zoo.export.card_schema import AccuracyCheck, MicroCheck, ModelCard


def card(acc, tflm, agree):
    return ModelCard(parameters=1234, total_bytes=5000, arena_bytes=3000, head_arena_bytes=400,
                     accuracy=AccuracyCheck(tflite=acc),
                     tflite_micro=MicroCheck(accuracy=tflm, litert_accuracy_same_sequences=acc,
                                             argmax_agreement_with_litert=agree,
                                             test_sequences=100))


def test_row_takes_sizes_from_the_first_export_and_accuracies_from_all(tmp_path, monkeypatch):
    runs = []
    for seed, acc in enumerate((0.91, 0.93, 0.95)):
        run = tmp_path / f"seed{seed}"
        run.mkdir()
        # A run's record is its config.yaml and metrics.json (`RunDirectory.record`).
        (run / "config.yaml").write_text(json.dumps({"task": "google12", "model": "fastgrnn"}))
        (run / "metrics.json").write_text(json.dumps({"test": {"accuracy": acc}}))
        runs.append(str(run))
    monkeypatch.setattr(kws_bench, "time_export", lambda out, runs: {"out": out.name})
    sel = {"model": "fastgrnn", "runs": runs, "lr": 0.01}
    row = kws_bench.table_row("fastgrnn", sel, [card(0.9, 0.89, 0.98), card(0.92, 0.92, 1.0)],
                              SimpleNamespace(runs=5), tmp_path / "out")
    assert row == {"form": "step", "params": 1234, "bytes": 5000, "arena": 3000,
                   "head_arena": 400, "float": [0.91, 0.93, 0.95], "int8": [0.9, 0.92],
                   "int8_tflm": [0.89, 0.92], "int8_litert_same": [0.9, 0.92],
                   "tflm_agreement": [0.98, 1.0], "tflm_sequences": 100,
                   "timing": {"out": "fastgrnn-0"}, "lr": 0.01}
    assert kws_bench.table_row("dscnn", {**sel, "model": "dscnn"}, [card(0.9, 0.9, 1.0)],
                               SimpleNamespace(runs=5), tmp_path)["form"] == "sequence"
