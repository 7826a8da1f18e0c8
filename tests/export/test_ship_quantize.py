"""`zoo.export.ship --quantize int16x8`: the tag ships TFLite's 16x8 streaming step model."""

import json

import numpy as np
import pytest


@pytest.mark.slow
def test_ship_int16x8_ships_the_16x8_step_model_and_its_card_says_so(har_run, har_dir, tmp_path,
                                                                        monkeypatch):
    from ai_edge_litert.interpreter import Interpreter

    import zoo
    from zoo.export.ship import main
    from zoo import pretrained

    dest = tmp_path / "pretrained"
    assert main([str(har_run), "--tag", "sirnn.har2", "--command", "test", "--quantize",
                 "int16x8", "--data-dir", str(har_dir), "--dest", str(dest)]) == 0
    card = json.loads((dest / "sirnn.har2" / "card.json").read_text())
    assert card["export"]["folder"] == "export-step-int16x8"
    assert card["export"]["quantize"] == "int16x8"
    assert not (dest / "sirnn.har2" / "export-step-int8").exists()
    # LiteRT's own reading of the shipped step model: 16-bit state in and out, 8-bit weights
    step = Interpreter(model_path=str(dest / "sirnn.har2" / "export-step-int16x8" / "step.tflite"))
    assert {d["dtype"] for d in step.get_input_details()} == {np.int16}
    assert {d["dtype"] for d in step.get_output_details()} == {np.int16}
    matrices = {t["dtype"] for t in step.get_tensor_details() if len(t["shape"]) == 2}
    assert np.int8 in matrices and np.float32 not in matrices
    # it loads as any pretrained model does (files checked against the card's sha256)
    monkeypatch.setattr(pretrained, "pretrained_root", lambda: dest)
    assert zoo.get_pretrained_cfg("sirnn.har2").export.quantize == "int16x8"


def test_ship_refuses_a_quantization_it_cannot_ship(har_run, tmp_path, capsys):
    from zoo.export.ship import main

    with pytest.raises(SystemExit):
        main([str(har_run), "--tag", "sirnn.har2", "--command", "test", "--quantize", "int4",
              "--dest", str(tmp_path / "p")])
    assert "invalid choice: 'int4' (choose from 'int8', 'int16x8')" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()
