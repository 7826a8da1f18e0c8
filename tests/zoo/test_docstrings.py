"""Every registered zoo layer and cell (and the zoo's constraints and initializers) documents its
arguments and carries a runnable ``Example:``, which runs here so that it cannot rot."""

import inspect
import re

import pytest

import zoo
from zoo.layers import CellRNN

_FENCE = re.compile(r"```python\n(.*?)```", re.S)


def _documented_classes():
    classes = {CellRNN, zoo.SpectralNormBall, zoo.MaxNormBall, zoo.SymmetricInit}
    for name in zoo.list_models():
        layer_class = zoo.get_model_entry(name).layer_class
        if layer_class.__module__.startswith("zoo."):
            classes.add(layer_class)
            if getattr(layer_class, "cell_class", None) is not None:
                classes.add(layer_class.cell_class)
    return sorted(classes, key=lambda c: c.__name__)


CLASSES = _documented_classes()


def examples(cls):
    """The code blocks of the class's own docstring after its ``Example:`` heading."""
    doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
    _, heading, rest = doc.partition("\nExample:\n")
    assert heading, f"{cls.__name__}'s docstring has no Example: section"
    blocks = _FENCE.findall(rest)
    assert blocks, f"{cls.__name__}'s Example: has no ```python block"
    return blocks


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_docstring_example_runs(cls):
    for code in examples(cls):
        # A fresh namespace: an example imports what it uses, so it runs when pasted.
        exec(compile(code, f"<{cls.__name__} example>", "exec"), {})


def _own_arguments(cls):
    return [p.name for p in list(inspect.signature(cls.__init__).parameters.values())[1:]
            if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]


@pytest.mark.parametrize("cls", [c for c in CLASSES if "cell_class" in c.__dict__
                                 or c.__name__.endswith("Cell")], ids=lambda c: c.__name__)
def test_docstring_names_every_argument(cls):
    """A cell's Args name each argument of its signature; a layer's each argument of its cell
    (the RNN arguments it documents by reference to `keras.layers.RNN`)."""
    _, _, args = inspect.cleandoc(cls.__doc__).partition("\nArgs:\n")
    args = args.split("\nCall arguments:")[0].split("\nExample:")[0]
    named = set(re.findall(r"\b\w+\b", args))
    wanted = _own_arguments(cls.cell_class if "cell_class" in cls.__dict__ else cls)
    assert not [a for a in wanted if a not in named], cls.__name__
