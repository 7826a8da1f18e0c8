"""002's memory factor is taken where its z means what the paper says (issue 22, item 6).

002 Lemmas 1-2 bound ||dh_t/dh_(t-1)|| of h_t = sigma(W h_(t-1) + U x_t) by z = sigma_1 ||W||.
For the iRNN the step is h + eta (phi(U v + W x + b) - alpha v) with v = 2h (K = 1, g0 =
"previous"): its Jacobian is (1 - 2 alpha eta) I + 2 eta D U, so ||U|| (about 10 for the shipped
SiRNN) is no bound of the step, and sigma_1 ||U|| = 10 gave mu_0 = 1e+129 for T = 128: an
artifact of applying the Elman formula, not a property of the model."""

from __future__ import annotations

import numpy as np

import zoo
from zoo.experiments.analysis import stability
from zoo.experiments.analysis.markdown import summary
from zoo.experiments.analysis.report import analyze_model
from zoo.layers import recurrent_layers


def _shipped_sirnn():
    model = zoo.create_model("sirnn", pretrained="har2")
    trained = model.layers[-1]
    return trained, recurrent_layers(trained)[0].cell


def test_irnn_gets_no_memory_factor_from_its_u_matrix():
    _, cell = _shipped_sirnn()
    report = stability.recurrence_report(cell, 128)
    assert report["sigma_max"] > 5  # ||U||: large, and not the step's Lipschitz constant
    assert "memory_factor" not in report


def test_elman_cells_keep_sigma_1_times_sigma_max():
    cell = zoo.create_layer("stablernn", units=8).cell
    cell.build((None, 3))
    report = stability.recurrence_report(cell, 50)
    assert report["memory_factor"]["z"] == report["lipschitz_times_sigma_max"]


def test_measured_factor_uses_the_step_jacobians():
    """For the iRNN the z is the measured contraction constant (max ||ds_t/ds_(t-1)||_2 over
    visited states; those Jacobians are checked against finite differences in
    test_analysis_oracles.py), and the summary says so beside ||dh_T/dh_1||."""
    trained, _ = _shipped_sirnn()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 24, trained.input_shape[-1])).astype("float32")
    result = analyze_model(trained, x, np.zeros(4, "int64"), jacobian_sequences=4,
                           max_sequences=4, folds=2, sensitivity_sequences=2)
    measured = result["stability"]["recurrence"]["memory_factor_measured"]
    assert measured["z"] == result["stability"]["contraction"]["max"]
    # nothing like ||U|| (13.7 for sirnn.har2_gen2, whose z is 1.84; 15.3 for generation 3, 2.23)
    assert measured["z"] < stability.recurrence_report(_shipped_sirnn()[1], 128)["sigma_max"] / 4
    lines = summary(result)
    assert any("||dh_T/dh_1||" in line for line in lines)
    assert any("(measured)" in line for line in lines)
