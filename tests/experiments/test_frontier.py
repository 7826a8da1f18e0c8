"""``zoo bench frontier`` (experiments/frontier.py): the accuracy x device-cost table and plot,
on a planted results tree: its CV figures against a NumPy computation of the CV epoch and the
mean / sd over folds, each CV variant joined to the device figures of its own graph."""

import json

import numpy as np
import pytest

from zoo.experiments import frontier

RNG = np.random.default_rng(7)
SIRNN = {"units": 80, "rank": 16, "state_clip": 1.0, "state_quant_bits": 8}


def _config(model, options, lr=0.01):
    return {"model": model, "model_options": options, "lr": lr, "task": "har2"}


def _plant(results, label, variant, config, curves, folds=5):
    """One results file per curve (fold k = curves[k]), as zoo.experiments.trials writes them."""
    for fold, curve in enumerate(curves):
        path = results / "har2" / label / variant / f"fold{fold}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        summary = {"val": curve[-1], "curve": list(curve), "test": 90.0, "parameters": 3523,
                   "seconds": 1.0, "epochs": len(curve), "best_epoch": len(curve)}
        path.write_text(json.dumps({"task": "har2", "label": label, "variant": variant,
                                    "fold": fold, "folds": folds, "config": config,
                                    "summary": summary}))


def _device(path):
    def fig(model, options, insns, flash, **extra):
        return {"model": model, "model_options": options, "parameters": 3523,
                "macs_per_step": 5840, "cortex_m4_instructions_per_step_O2": insns,
                "cortex_m4_flash_bytes_Os": flash, "cortex_m4_ram_bytes": 760,
                "step_ops": {"count": 12, "histogram": {"ADD": 12}}, "const_bytes": 5000,
                "c_check": {}, "commands": ["zoo export x"], "source": "runs/x", **extra}

    variants = {
        # the cell's own config: every option spelled out, as c_frontier.py records it
        "premultiply": fig("sirnn", {**SIRNN, "premultiply": True, "qat": None}, 20837.1, 8008,
                           shipped=True, export_check={"drop_points": 0.57, "test_sequences": 701}),
        "lean_qat": fig("sirnn", {**SIRNN, "premultiply": False, "qat": "int8"}, 15000.0, 7000),
        "units48": fig("sirnn", {**SIRNN, "units": 48, "premultiply": True, "qat": None}, 9000.0, 5000),
        # the shipped graph again, from a run: the CV rows keep the shipped tag's figures
        "a_run": fig("sirnn", {**SIRNN, "premultiply": True, "qat": None}, 20840.0, 8016),
    }
    path.write_text(json.dumps({"variants": variants, "toolchain": {"cc": "gcc"}}))


def _expected(curves):
    """The CV epoch (highest mean over folds, earliest of ties) and 'mean ± sd' there."""
    a = np.array(curves)
    epoch = int(np.argmax(a.mean(axis=0)))
    at = a[:, epoch]
    return epoch + 1, f"{at.mean():.2f} ± {at.std(ddof=1):.2f}"


def test_the_table_gives_numpys_cv_figures_joined_to_each_graphs_cost(tmp_path, capsys,
                                                                       monkeypatch):
    monkeypatch.setattr(frontier, "card_variants", lambda task: {})  # the planted graphs only
    results, device = tmp_path / "results", tmp_path / "device.json"
    _device(device)
    rot15 = 85 + 10 * RNG.random((5, 6))  # five folds, six epochs
    lean = 80 + 10 * RNG.random((3, 6))   # three of five folds done
    # the recipe's options only: premultiply comes from the model's registered default (True)
    _plant(results, "sirnn", "rot15", _config("sirnn", SIRNN), rot15)
    _plant(results, "sirnn", "lean_rot15_qat",
           _config("sirnn", {**SIRNN, "premultiply": False, "qat": "int8"}, lr=0.001), lean)
    _plant(results, "gru", "base", _config("gru", {"units": 80}), 70 + RNG.random((2, 4)))
    # `zoo bench fold-int8` files of two lean folds: their drop replaces any shipped figure
    drops = [0.3, -0.1]
    for fold, drop in enumerate(drops):
        path = tmp_path / "int8" / "har2" / "sirnn" / "lean_rot15_qat" / f"fold{fold}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"windows": 10, "float": 90.0, "int8": 90.0 - drop,
                                    "agreement": 99.0, "qat": True, "drop": drop}))
    doc, plot = tmp_path / "frontier.md", tmp_path / "img" / "frontier.png"
    assert frontier.main(["--device", str(device), "--results", str(results),
                          "--int8-results", str(tmp_path / "int8"),
                          "--doc", str(doc), "--plot", str(plot)]) == 0
    table = capsys.readouterr().out
    rows = {line.split(" | ")[2]: line for line in table.splitlines() if line.startswith("| ")}
    _, rot15_cell = _expected(rot15)
    _, lean_cell = _expected(lean)
    assert f"| {rot15_cell} | 5 / 5 |" in rows["results: sirnn / rot15"]
    # per step, per 128-sample window and per second of HAR's 2.56 s windows
    assert f"| 20,837 | {20837.1 * 128:,.0f} | {20837.1 * 50:,.0f} | 8,008 | 760 |" in \
        rows["results: sirnn / rot15"]
    assert "0.57 (shipped, 701 test windows)" in rows["results: sirnn / rot15"]
    assert f"| {lean_cell} | 3 / 5 |" in rows["results: sirnn / lean_rot15_qat"]
    assert "| lean_qat | " in rows["results: sirnn / lean_rot15_qat"]
    assert "| 15,000 | 1,920,000 | 750,000 | 7,000 |" in rows["results: sirnn / lean_rot15_qat"]
    d = np.array(drops)
    assert rows["results: sirnn / lean_rot15_qat"].endswith(
        f"| {d.mean():.2f} ± {d.std(ddof=1):.2f}, worst {d.max():.2f} (2 folds) |")
    # a graph with CV results but no device figure, and a measured graph without CV results
    assert "| - | - | - | - | - |" in rows["results: gru / base"]
    alone = [line for line in table.splitlines() if " | - | 3,523 | " in line]
    assert alone[0].startswith("| sirnn 48u r16 premultiply | units48 | - |")
    assert "| 9,000 | 1,152,000 | 450,000 | 5,000 |" in alone[0]
    assert alone[0].endswith("| - | - | - |")
    assert alone[1].startswith("| sirnn 80u r16 premultiply | a_run | - |")
    assert "| 20,840 | 2,667,520 | 1,042,000 | 8,016 |" in alone[1]
    # sorted by instructions per window, the unmeasured last
    order = [line.split(" | ")[1] for line in table.splitlines()[2:] if line.startswith("| ")]
    assert order == ["units48", "lean_qat", "premultiply", "a_run", "-"]
    assert table.splitlines()[-1].endswith("(2 points)")
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![frontier](img/frontier.png)" in doc.read_text()


def test_the_cv_epoch_is_numpys_and_missing_folds_are_counted(tmp_path):
    results = tmp_path / "r"
    curves = [[80.0, 90.0, 85.0], [70.0, 88.0, 92.0]]  # means 75, 89, 88.5 -> epoch 2
    _plant(results, "sirnn", "v", _config("sirnn", SIRNN), curves, folds=4)
    [row] = frontier.cv_by_graph([results], "har2")
    epoch, _ = _expected(curves)
    assert (row["epoch"], row["val_at_epoch"], row["folds"], row["planned"]) == (epoch, [90.0, 88.0], [0, 1], 4)


def test_a_results_file_that_is_not_one_is_named(tmp_path):
    bad = tmp_path / "r" / "har2" / "sirnn" / "v" / "fold0.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(json.dumps({"fold": 0, "summary": {}}))
    with pytest.raises(ValueError, match=r"fold0.json: not a zoo sweep cv results file: no task"):
        frontier.cv_by_graph([tmp_path / "r"], "har2")
    with pytest.raises(FileNotFoundError, match="no device JSON"):
        frontier.load_device(tmp_path / "none.json")


def test_a_model_reading_frames_costs_its_steps_per_window():
    """Issue 43 item 2: a CV variant reading 4 samples per step joins the installed tag of that
    graph (its card's C figures) and costs 32 steps per 128-sample window, not 128."""
    cards = frontier.card_variants("har2")
    fig = cards["card: sirnn.har2"]
    from zoo import get_pretrained_cfg

    card = get_pretrained_cfg("sirnn.har2")
    assert fig["frames_per_step"] == 4
    assert fig["cortex_m4_instructions_per_step_O2"] == \
        card.export.c.cortex_m4_instructions_per_step_O2
    config = {"model": "sirnn", "model_options": card.training["model_options"],
              "task_options": {"frames_per_step": 4}}
    row = {"label": "sirnn", "variant": "f4", "val_at_epoch": [96.0, 97.0], "folds": [0, 1],
           "planned": 2, "epoch": 3, "runs": [], "study": "s",
           "graph": frontier.graph_key("sirnn", config["model_options"], frontier.frames_of(config)),
           "describe": "f4"}
    [joined, *_] = [r for r in frontier.frontier_rows(cards, [row]) if r["cv"] != "-"]
    assert joined["device_key"] == "card: sirnn.har2"
    per_step = fig["cortex_m4_instructions_per_step_O2"]
    # the head once per window, as the card's cost and zoo profile count it (645 instructions)
    assert joined["per_window"] == pytest.approx(32 * per_step + card.cost.head_instructions)
    assert joined["per_window"] == pytest.approx(card.cost.instructions_per_window, abs=1)
    assert joined["per_second"] == pytest.approx(card.cost.instructions_per_second, abs=1)


def test_a_k8_cv_variant_joins_the_k8_graph_not_the_k1_graph_of_its_size(tmp_path):
    """Issue 50 item 3: samples per step are part of the key. Two device variants of the same
    48u r16 lean QAT graph, one reading 8 samples per step: the CV variant with the task option
    frames_per_step 8 takes the first (16 steps per 128-sample window plus the head once), the
    one without it the second (128 steps)."""
    lean = {**SIRNN, "units": 48, "premultiply": False, "qat": "int8", "eta_init": 0.08}
    common = {"model": "sirnn", "source": "runs/x", "const_bytes": 1,
              "step_ops": {"count": 9, "histogram": {"ADD": 9}}, "cortex_m4_flash_bytes_Os": 7328}
    device = {
        "l8": {**common, "model_options": lean, "frames_per_step": 8,
               "cortex_m4_instructions_per_step_O2": 12541.6,
               "cortex_m4_head_instructions_O2": 438.0},
        "l1": {**common, "model_options": lean, "cortex_m4_instructions_per_step_O2": 8381.4,
               "cortex_m4_head_instructions_O2": 627.0}}
    results = tmp_path / "r"
    k8 = {**_config("sirnn", lean), "task_options": {"val_fold": [0, 5], "frames_per_step": 8}}
    _plant(results, "sirnn", "p8_u48_r16_qat", k8, [[95.0], [96.0]], folds=2)
    _plant(results, "sirnn", "l_r16_u48_qat", _config("sirnn", lean), [[93.0], [92.0]], folds=2)
    rows = {r["cv"].split(" / ")[-1]: r for r in frontier.frontier_rows(
        device, frontier.cv_by_graph([results], "har2"), task="har2")}
    assert rows["p8_u48_r16_qat"]["device_key"] == "l8"
    assert rows["p8_u48_r16_qat"]["per_window"] == pytest.approx(16 * 12541.6 + 438.0)
    assert rows["p8_u48_r16_qat"]["per_second"] == pytest.approx((16 * 12541.6 + 438.0) / 2.56)
    assert rows["l_r16_u48_qat"]["device_key"] == "l1"
    assert rows["l_r16_u48_qat"]["per_window"] == pytest.approx(128 * 8381.4 + 627.0)
    assert "8/step" in rows["p8_u48_r16_qat"]["graph"]
    assert "8/step" not in rows["l_r16_u48_qat"]["graph"]


def test_the_page_names_the_command_that_wrote_it():
    """The defaults follow --task, and the page's command names only what differs from them:
    the lead reruns exactly that command when the campaign has added results."""
    import argparse

    for task, command in (("har2", "zoo bench frontier"),
                          ("dsa19", "zoo bench frontier --task dsa19")):
        args = argparse.Namespace(task=task, **frontier.defaults(task))
        assert frontier._command(args) == command
    args = argparse.Namespace(task="dsa19", **{**frontier.defaults("dsa19"),
                                               "int8_results": []})
    assert frontier._command(args) == "zoo bench frontier --task dsa19 --int8-results"
    assert frontier.defaults("dsa19")["doc"].name == "frontier_dsa19.md"
    assert frontier.defaults("har2")["doc"].name == "frontier.md"


def test_a_tag_measured_before_its_next_generation_is_not_labelled_as_it():
    """The device JSON's `sirnn.har2` was measured when the tag was a k = 1 graph; its card is
    now the k = 4 graph, so the plot calls the first an earlier generation; a tag whose card is
    still its graph keeps its name."""
    options = {**SIRNN, "premultiply": True, "qat": "int8"}
    device = {"sirnn.har2": {"model": "sirnn", "model_options": options, "shipped": True},
              "card: sirnn.har2": {"model": "sirnn", "model_options": options, "shipped": True,
                                   "frames_per_step": 4},
              "gru.har2": {"model": "gru", "model_options": {"units": 80}, "shipped": True},
              "card: gru.har2": {"model": "gru", "model_options": {"units": 80}, "shipped": True}}
    assert frontier.earlier_generations(device) == ["sirnn.har2"]
