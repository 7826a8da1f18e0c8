"""The one-invoke int8 sequence model (export/sequence_int8.py): the shipped int8 step exports'
step and head assembled into one builtin WHILE model, checked bit for bit against the step loop
(`device_runtime.StepModel`: the step model invoked T times, its state fed back, then the head)
on the HAR subset's test windows, in ai-edge-litert and in the tflite-micro Python interpreter.

Two cells: the SiRNN (h_t and h_{t-1} share a quantization: the state is copied back) and the
GRU (they do not, and the head reads a third one: the model requantizes with QUANTIZE ops)."""

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from zoo.experiments import sequence_int8 as sx
from zoo.export import sequence_int8 as si
from zoo.export.card_schema import read_export_card

BUILTIN_LOOP_OPS = {"WHILE", "LESS", "GATHER", "ADD"}


def _has_tflm():
    return "tflite-micro" in sx.available_runtimes()


@pytest.fixture(scope="module")
def sirnn_export():
    from zoo.pretrained import archive_root, verified_dir

    # Generation 1: its step clamps the state with MINIMUM and RELU (the QAT step of sirnn.har2
    # saturates in its ADD and has neither), the ops these tests are about.
    return verified_dir("sirnn.har2_gen1", root=archive_root()) / "export-step-int8"


@pytest.fixture(scope="module")
def gru_export():
    from zoo.pretrained import archive_root, verified_dir

    return verified_dir("gru.har2_gen1", root=archive_root()) / "export-step-int8"


@pytest.fixture(scope="module")
def sirnn_report(sirnn_export, har_dir, tmp_path_factory):
    """The command's report on the shipped SiRNN: built, arena found, compared with the step
    loop on the whole test split in every installed runtime, timed (2 windows: the code path,
    not a measurement)."""
    out = tmp_path_factory.mktemp("seq") / "sequence_int8.tflite"
    args = argparse.Namespace(export_dir=str(sirnn_export), out=str(out), data_dir=str(har_dir),
                              lstm=None, reps=2, json=None, keep_identity_ops=False)
    return sx.build_and_check(args)


@pytest.fixture(scope="module")
def gru_model(gru_export, tmp_path_factory):
    path = tmp_path_factory.mktemp("seq") / "gru.tflite"
    path.write_bytes(si.build_from_export(gru_export).tflite)
    return path


@pytest.fixture(scope="module")
def test_windows(sirnn_export, har_dir):
    x, y, _ = sx.load_test_split(sirnn_export, har_dir)
    return x, y


# ------------------------------------------------------------------------------ SiRNN (tied)
def test_sirnn_is_builtin_only_small_and_one_while_loop(sirnn_report):
    ops = set(sirnn_report["ops"])
    assert "CUSTOM" not in ops and "FLEX" not in " ".join(ops)
    # the loop's own ops plus the step's and head's (docs/export.md lists them) but the two
    # clamps of state_clip=1, identities on the int8 state (next test)
    assert ops == BUILTIN_LOOP_OPS | {"FULLY_CONNECTED", "MUL", "SUB"}
    assert sirnn_report["bytes"] < 12_000  # the goal: under 12 KB for the HAR-2 SiRNN
    assert Path(sirnn_report["out"]).stat().st_size == sirnn_report["bytes"]
    assert sirnn_report["requantize"] == []  # tied state: copied back, no QUANTIZE op


def test_left_out_clamps_change_no_int8_value_in_any_runtime(sirnn_report):
    dropped = sirnn_report["dropped"]
    assert {(d["op"], d["subgraph"]) for d in dropped} == {
        ("MINIMUM", "sequence_int8/while_body"), ("RELU", "sequence_int8/while_body")}
    assert {d["runtime"] for d in dropped} == set(sirnn_report["runtimes"])
    assert all(d["differ"] == 0 and d["values"] == 256 for d in dropped)


def test_keep_identity_ops_copies_every_step_op_and_is_bit_exact(sirnn_export, test_windows,
                                                                 tmp_path):
    built = si.build_from_export(sirnn_export, keep_identity_ops=True)
    assert built.dropped == []
    assert {"MINIMUM", "RELU"} <= set(si.op_names(built.tflite))
    path = tmp_path / "literal.tflite"
    path.write_bytes(built.tflite)
    x, y = test_windows
    r = sx.compare(sirnn_export, path, x[:200], y[:200], "litert")
    assert r["identical"] == r["windows"] == 200, r


def test_a_clamp_that_changes_values_is_kept(sirnn_export):
    """MINIMUM against 100 instead of 127 clips int8 states above 100: not an identity."""
    step = si.read_model((sirnn_export / "step.tflite").read_bytes())
    g = step.subgraphs[0]
    names = si._builtin_names()
    op = next(o for o in g.operators
              if names[step.operatorCodes[o.opcodeIndex].builtinCode] == "MINIMUM")
    const = next(t for t in op.inputs if g.tensors[t].buffer
                 and step.buffers[g.tensors[t].buffer].data is not None)
    step.buffers[g.tensors[const].buffer].data = np.array([100], np.int8).view(np.uint8)
    card = read_export_card(str(sirnn_export))
    built = si.build_sequence(si.write_model(step), (sirnn_export / "head.tflite").read_bytes(),
                              card.step_io, card.timesteps)
    assert [d["op"] for d in built.dropped] == ["RELU"]
    assert "MINIMUM" in si.op_names(built.tflite)


def test_sirnn_bit_exact_with_step_loop_in_litert(sirnn_report, test_windows):
    r = sirnn_report["agreement"]["litert"]
    assert r["windows"] == len(test_windows[0]) == 701  # the whole HAR test split
    assert r["identical"] == r["windows"], r
    assert r["accuracy"] == r["loop_accuracy"] > 0.95


@pytest.mark.skipif(not _has_tflm(), reason="tflite-micro is not installed")
def test_sirnn_bit_exact_with_step_loop_in_tflite_micro(sirnn_report):
    r = sirnn_report["agreement"]["tflite-micro"]
    assert r["windows"] == 701 and r["identical"] == r["windows"], r
    assert 0 < sirnn_report["tflm_arena_bytes"] < 16_384


def test_litert_signature_runner_gives_the_same_logits(sirnn_report, test_windows):
    from ai_edge_litert.interpreter import Interpreter

    seq = sx.SequenceRunner(Path(sirnn_report["out"]), "litert")
    xq = seq.prepare(test_windows[0][0])
    runner = Interpreter(model_path=sirnn_report["out"]).get_signature_runner("serving_default")
    assert np.array_equal(runner(x=xq)["logits"], seq.predict_prepared(xq))


def test_report_times_each_model_in_each_runtime(sirnn_report):
    for runtime in sirnn_report["runtimes"]:
        timing = sirnn_report["latency"][runtime]
        assert set(timing) == {"sequence_int8", "step_loop_int8"}
        assert all(t["median_us"] > 0 for t in timing.values())


# ------------------------------------------------------------------------------ GRU (requantized)
@pytest.mark.slow
def test_gru_requantizes_state_and_head_input_exactly(gru_model):
    checks = si.requantize_ops(gru_model.read_bytes())
    assert {c["subgraph"] for c in checks} == {"main", "sequence_int8/while_body"}
    for runtime in sx.available_runtimes():
        for c in checks:  # every int8 value, not only those the test windows reach
            assert si.requantize_exact(c["in"], c["out"], runtime)["differ"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["litert", "tflite-micro"])
def test_gru_bit_exact_with_step_loop(runtime, gru_export, gru_model, test_windows):
    if runtime not in sx.available_runtimes():
        pytest.skip(f"{runtime} is not installed")
    x, y = test_windows
    # TFLite Micro's reference kernels run the 80-unit GRU ~5x slower than LiteRT: the first
    # 200 windows there (the command checks all 701), the whole split in LiteRT.
    n = len(x) if runtime == "litert" else 200
    arena = sx.smallest_arena_or_none(gru_model.read_bytes(), runtime)
    r = sx.compare(gru_export, gru_model, x[:n], y[:n], runtime, arena)
    assert r["identical"] == r["windows"] == n, r


# ------------------------------------------------------------------------------ the checks can fail
def _with_body_scale(model: Path, op_name: str, factor: float, out: Path) -> Path:
    """A copy of ``model`` with the output scale of the loop body's first ``op_name`` op
    multiplied by ``factor`` (a corrupted requantization inside the step)."""
    m = si.read_model(model.read_bytes())
    code = getattr(si._schema().BuiltinOperator, op_name)
    body = m.subgraphs[2]
    op = next(o for o in body.operators
              if max(m.operatorCodes[o.opcodeIndex].builtinCode,
                     m.operatorCodes[o.opcodeIndex].deprecatedBuiltinCode) == code)
    q = body.tensors[op.outputs[0]].quantization
    q.scale = np.asarray(q.scale, np.float32) * np.float32(factor)
    out.write_bytes(si.write_model(m))
    return out


def test_a_corrupted_scale_is_detected(sirnn_export, sirnn_report, test_windows, tmp_path):
    x, y = test_windows
    bad = _with_body_scale(Path(sirnn_report["out"]), "MUL", 1.01, tmp_path / "bad.tflite")
    r = sx.compare(sirnn_export, bad, x[:50], y[:50], "litert")
    assert r["identical"] < r["windows"] and r["max_abs_diff_lsb"] > 0


def test_requantize_check_finds_a_rounding_difference():
    # 1 LSB at scale 1 into scale 2 puts odd values exactly half-way: the step loop rounds half
    # to even (NumPy), the runtimes' fixed-point QUANTIZE does not, so 64 of 256 values differ.
    for runtime in sx.available_runtimes():
        r = si.requantize_exact((1.0, 0), (2.0, 0), runtime)
        assert r["differ"] > 0 and r["first"]["runtime"] != r["first"]["step_loop"]


def test_refuses_an_export_that_is_not_int8_step(sirnn_export, tmp_path):
    copy = tmp_path / "export"
    shutil.copytree(sirnn_export, copy)
    card = json.loads((copy / "model_card.json").read_text())
    card["quantize"] = "int16x8"
    (copy / "model_card.json").write_text(json.dumps(card))
    with pytest.raises(ValueError, match="int8 step export"):
        si.build_from_export(copy)
