"""Analytic MAC counts against the MatMul shapes in the traced TensorFlow graph of one step."""

import keras
import pytest
import tensorflow as tf

import zoo
from zoo.macs import cell_macs_per_step, model_macs_per_sequence

CASES = [
    ("irnn", {"units": 12, "k": 3, "rank": 4}),
    ("irnn", {"units": 12, "k": 2, "rank": None, "premultiply": False}),
    ("irnn", {"units": 12, "k": 1, "rank": None, "premultiply": True}),
    ("sirnn", {"units": 12, "rank": 5}),
    ("fastrnn", {"units": 12}),
    ("fastgrnn", {"units": 12, "w_rank": 2, "u_rank": 3}),
    ("antisymmetric", {"units": 12}),
    ("gated_antisymmetric", {"units": 12}),
    ("stablernn", {"units": 12}),
    ("simple_rnn", {"units": 12}),
    ("gru", {"units": 12}),
    ("lstm", {"units": 12}),
]


def graph_matmul_macs(cell, d):
    """Sum m*k*n over every MatMul/BatchMatMul in the graph of one cell call (batch 1)."""
    x = tf.zeros((1, d))
    states = [tf.zeros((1, s)) for s in tf.nest.flatten(cell.state_size)]

    @tf.function
    def step(x, states):
        return cell(x, states)

    graph = step.get_concrete_function(x, states).graph
    total = 0
    for op in graph.get_operations():
        if op.type in ("MatMul", "BatchMatMulV2"):
            a, b = (t.shape.as_list() for t in op.inputs)
            ta, tb = op.get_attr("transpose_a") if op.type == "MatMul" else False, \
                op.get_attr("transpose_b") if op.type == "MatMul" else False
            m, k = (a[-1], a[-2]) if ta else (a[-2], a[-1])
            n = b[-2] if tb else b[-1]
            total += m * k * n
    return total


@pytest.mark.parametrize("name,options", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_analytic_macs_equal_the_traced_graph(name, options):
    d = 5
    layer = zoo.create_layer(name, **options)
    layer.build((1, 7, d))
    assert cell_macs_per_step(layer.cell, d) == graph_matmul_macs(layer.cell, d)


RECURRENT = [n for n in zoo.list_models()
             if issubclass(zoo.get_model_entry(n).layer_class, keras.layers.RNN)]


@pytest.mark.parametrize("name", RECURRENT)
def test_every_registered_model_counts_its_traced_graph(name):
    """Each registered recurrent model at its defaults (a new model is checked without a line
    here); the zoo's cells count themselves, Keras's through the table in zoo.macs."""
    d = 5
    options = {"units": 12, **({"rank": 4} if zoo.get_model_entry(name).options().get("rank")
                               else {})}
    layer = zoo.create_layer(name, **options)
    layer.build((1, 7, d))
    assert cell_macs_per_step(layer.cell, d) == graph_matmul_macs(layer.cell, d)


def test_a_cell_without_a_count_is_an_error():
    with pytest.raises(TypeError, match="macs_per_step"):
        cell_macs_per_step(keras.layers.Dense(3), 4)


def test_sequence_macs_add_the_head():
    model = zoo.create_model("fastrnn", (7, 5), 3, units=12)
    assert model_macs_per_sequence(model) == 7 * (5 * 12 + 12 * 12) + 12 * 3
    seq = zoo.create_model("fastrnn", (7, 5), 3, units=12, head="sequence")
    assert model_macs_per_sequence(seq) == 7 * (5 * 12 + 12 * 12 + 12 * 3)
