"""A device-cost model fitted to measured C costs: what a configuration will cost on a target
(instructions per step, per window and per second, flash and RAM) before it is trained.

The measurements are the Cortex-M4 figures of the zoo's C backend (``zoo export --form c``,
counted under qemu-arm by ``tools/cortexm``): every variant of ``experiments/results/frontier/``
(`FRONTIER_FILES`), every shipped tag's card (``models/pretrained/*/card.json``) that has
them, and the small models of ``experiments/results/cost_model/points.json`` (`cost_points`). Each configuration is described by the matrix products one recurrent step computes
(`matrix_products`, the same products `zoo.macs` counts), and the fit is linear least squares,
weighted by 1 / measured (relative error), on these features:

* instructions per step = a * MACs + b * matrix output rows + c_cell * units + d
  (MACs: the multiply-accumulates; rows: each product's output length, which pays the int8
  kernel's per-row requantisation; units times a per-cell-family coefficient: the element-wise
  gates, the state's clipping and requantisation: a GRU has three gates, a SiRNN one);
* head instructions (once per window) = a * units * classes + b * units + c;
* flash bytes (-Os) = a * parameters + b * output rows + c_cell * units + d * products + e;
* RAM bytes = c_cell * units + a * input width + b * classes + d.

`leave_one_out` scores each measured point by a fit on all the others: that is the error the
model makes on a configuration it has not seen (docs/your-data.md reports it). Only the cell
families measured can be priced: ``sirnn``, ``fastgrnn`` and ``gru`` (the C backend takes no
LSTM: its step carries two state vectors).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "frontier"
# small models measured for this model (python -m zoo.experiments.cost_points RUN ...)
POINTS_FILE = Path(__file__).resolve().parent / "results" / "cost_model" / "points.json"
# (file, input width per sample, classes) of the recorded frontier measurements
FRONTIER_FILES = (("har2_device.json", 9, 2), ("dsa19_device.json", 45, 19))
CELL_MODELS = {"IRNNCell": "sirnn", "FastGRNNCell": "fastgrnn", "GRUCell": "gru"}
FAMILIES = ("sirnn", "fastgrnn", "gru")
TARGETS = ("cortex-m4",)


@dataclasses.dataclass(frozen=True)
class Shape:
    """What a cost depends on besides the cell: the recurrent step's input width (samples per
    step x channels), steps per window, classes and the window's length in seconds (None when
    the data does not say; per-second costs are then not known)."""

    input_width: int
    steps: int
    classes: int
    window_seconds: float | None = None


def matrix_products(model: str, options: dict, input_width: int) -> list[tuple[int, int]]:
    """The (inputs, outputs) of every matrix-vector product of one step of ``model``, in the
    order the step computes them (the products `zoo.macs` counts: a test checks the sums).
    Options left out take the registry's defaults (a SiRNN premultiplies unless told not to)."""
    options = resolved_options(model, options)
    units = int(options["units"])
    if model == "sirnn":
        rank = options.get("rank")
        recurrent = [(units, rank), (rank, units)] if rank else [(units, units)]
        repeats = int(options.get("k") or 1) * (2 if options.get("premultiply") else 1)
        return [(input_width, units)] + recurrent * repeats
    if model == "fastgrnn":
        return (_chain(input_width, options.get("w_rank"), units)
                + _chain(units, options.get("u_rank"), units))
    if model in ("gru", "lstm"):
        gates = 3 if model == "gru" else 4
        return [(input_width, gates * units), (units, gates * units)]
    raise ValueError(f"no cost model for model {model!r}: the measured C costs cover "
                     f"{', '.join(FAMILIES)}")


def resolved_options(model: str, options: dict) -> dict:
    """``options`` over the registered model's defaults, its pinned options (SiRNN's k=1) last."""
    from zoo.registry import get_model_entry

    try:
        entry = get_model_entry(model)
    except ValueError:
        return dict(options)
    return {**entry.options(), **options, **entry.fixed}


def _chain(inputs: int, rank, outputs: int) -> list[tuple[int, int]]:
    return [(inputs, rank), (rank, outputs)] if rank else [(inputs, outputs)]


def parameters(model: str, options: dict, input_width: int, classes: int) -> int:
    """Trainable weights of the matrices (each distinct one once), biases and the head: what
    the int8 C export stores (scalars such as SiRNN's eta are left out: a few bytes)."""
    # each matrix once: K recursions and premultiply reuse the same U
    once = matrix_products(model, {**options, "k": 1, "premultiply": False}, input_width)
    weights = sum(i * o for i, o in once)
    units = int(options["units"])
    biases = {"gru": 6 * units, "lstm": 4 * units, "fastgrnn": 2 * units}.get(model, units)
    return weights + biases + units * classes + classes


@dataclasses.dataclass(frozen=True)
class Point:
    """One measured configuration: what it is, its features and its measured figures."""

    name: str
    model: str
    options: dict
    input_width: int
    classes: int
    instructions_per_step: float
    head_instructions: float | None
    flash_bytes: int | None
    ram_bytes: int | None

    @property
    def units(self) -> int:
        return int(self.options["units"])


def measured_points(results: Path = RESULTS, cards: Path | None = None) -> list[Point]:
    """Every recorded Cortex-M4 C measurement (frontier files, then the cards), a point that
    repeats an earlier one's configuration and instruction count only once."""
    points = []
    for name, width, classes in FRONTIER_FILES:
        path = Path(results) / name
        if not path.is_file():
            continue
        for key, fig in json.loads(path.read_text())["variants"].items():
            if "c_export_error" in fig or fig.get("cell") not in CELL_MODELS:
                continue
            points.append(Point(key, CELL_MODELS[fig["cell"]], fig["model_options"],
                                width * int(fig.get("frames_per_step") or 1), classes,
                                fig["cortex_m4_instructions_per_step_O2"],
                                fig.get("cortex_m4_head_instructions_O2"),
                                fig["cortex_m4_flash_bytes_Os"], fig["cortex_m4_ram_bytes"]))
    points += card_points(cards) + recorded_points()
    unique, seen = [], set()
    for p in points:
        key = (p.model, p.input_width, p.instructions_per_step,
               json.dumps(matrix_products(p.model, p.options, p.input_width)))
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def recorded_points(path: Path = POINTS_FILE) -> list[Point]:
    """The points of ``experiments/results/cost_model/points.json`` (`cost_points`)."""
    if not Path(path).is_file():
        return []
    return [Point(name, p["model"], p["options"], p["input_width"], p["classes"],
                  p["instructions_per_step"], p["head_instructions"], p["flash_bytes"],
                  p["ram_bytes"])
            for name, p in sorted(json.loads(Path(path).read_text())["points"].items())]


def card_points(cards: Path | None = None) -> list[Point]:
    """The shipped tags whose cards hold Cortex-M4 C figures (their instructions per step)."""
    if cards is None:
        from importlib.resources import files

        cards = Path(str(files("zoo.models") / "pretrained"))
    points = []
    for path in sorted(Path(cards).glob("*/card.json")):
        card = json.loads(path.read_text())
        c = card.get("export", {}).get("c")
        if not c or card["model"] not in FAMILIES:
            continue
        width = card["input_shape"][-1] * int(card.get("frames_per_step") or 1)
        points.append(Point(f"{card['tag']} (card)", card["model"],
                            card["training"]["model_options"], width, card["num_classes"],
                            c["cortex_m4_instructions_per_step_O2"], None,
                            c["cortex_m4_flash_bytes_Os"], c["cortex_m4_ram_bytes"]))
    return points


def _family(model: str) -> list[float]:
    return [float(model == f) for f in FAMILIES]


def step_features(model: str, options: dict, input_width: int) -> list[float]:
    """[MACs, output rows, units x each family, 1]: the step's features (module doc)."""
    products = matrix_products(model, options, input_width)
    units = int(options["units"])
    return [sum(i * o for i, o in products), sum(o for _, o in products),
            *[units * f for f in _family(model)], 1.0]


def head_features(model: str, options: dict, input_width: int, classes: int) -> list[float]:
    units = int(resolved_options(model, options)["units"])
    return [units * classes, units, 1.0]


def flash_features(model: str, options: dict, input_width: int, classes: int) -> list[float]:
    """[parameters, output rows, units x each family, products, 1]: the constants (int8
    weights, int32 biases, per-row scales) and the code of each product and gate."""
    products = matrix_products(model, options, input_width)
    units = int(options["units"])
    return [parameters(model, options, input_width, classes), sum(o for _, o in products),
            *[units * f for f in _family(model)], len(products), 1.0]


def ram_features(model: str, options: dict, input_width: int, classes: int) -> list[float]:
    """[units x each family, input width, classes, 1]: the state, the gates' scratch and the
    input and logits buffers."""
    units = int(options["units"])
    return [*[units * f for f in _family(model)], input_width, classes, 1.0]


# quantity -> (feature function, the Point attribute it predicts)
QUANTITIES = {
    "instructions_per_step": (lambda p: step_features(p.model, p.options, p.input_width),
                              "instructions_per_step"),
    "head_instructions": (lambda p: head_features(p.model, p.options, p.input_width, p.classes),
                          "head_instructions"),
    "flash_bytes": (lambda p: flash_features(p.model, p.options, p.input_width, p.classes),
                    "flash_bytes"),
    "ram_bytes": (lambda p: ram_features(p.model, p.options, p.input_width, p.classes),
                  "ram_bytes"),
}


def _solve(features: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Least squares weighted by 1 / measured: it minimises the relative errors."""
    weight = 1.0 / measured
    coef, *_ = np.linalg.lstsq(features * weight[:, None], measured * weight, rcond=None)
    return coef


def _data(points: list[Point], quantity: str):
    feature, attribute = QUANTITIES[quantity]
    have = [p for p in points if getattr(p, attribute) is not None]
    return (have, np.array([feature(p) for p in have], float),
            np.array([getattr(p, attribute) for p in have], float))


@dataclasses.dataclass(frozen=True)
class CostModel:
    """Fitted coefficients per quantity (`QUANTITIES`) for one target."""

    target: str
    coefficients: dict
    points: int
    # quantity -> the worst leave-one-out error (relative): the guard a budget check adds
    margins: dict = dataclasses.field(default_factory=dict)

    def guarded(self, cost: dict) -> dict:
        """``cost`` raised by the model's worst leave-one-out error of each quantity (per
        window and per second by the step's): what a budget is checked against, so that a
        configuration predicted just under it is not measured over it."""
        step = self.margins.get("instructions_per_step", 0.0)
        margin = {"instructions_per_window": step, "instructions_per_second": step,
                  "flash_bytes": self.margins.get("flash_bytes", 0.0),
                  "ram_bytes": self.margins.get("ram_bytes", 0.0)}
        return {k: (None if v is None else v * (1 + margin.get(k, 0.0)))
                for k, v in cost.items()}

    def predict(self, model: str, options: dict, shape: Shape) -> dict:
        """Predicted costs of ``model`` with ``options`` on ``shape`` (integers, rounded)."""
        step = float(np.dot(self.coefficients["instructions_per_step"],
                            step_features(model, options, shape.input_width)))
        head = float(np.dot(self.coefficients["head_instructions"],
                            head_features(model, options, shape.input_width, shape.classes)))
        window = shape.steps * step + head
        cost = {"instructions_per_step": round(step), "instructions_per_window": round(window),
                "flash_bytes": round(float(np.dot(self.coefficients["flash_bytes"], flash_features(
                    model, options, shape.input_width, shape.classes)))),
                "ram_bytes": round(float(np.dot(self.coefficients["ram_bytes"], ram_features(
                    model, options, shape.input_width, shape.classes))))}
        cost["instructions_per_second"] = (round(window / shape.window_seconds)
                                           if shape.window_seconds else None)
        return cost


def fit(points: list[Point] | None = None, target: str = "cortex-m4") -> CostModel:
    """The cost model of ``target`` fitted to ``points`` (default: every recorded one)."""
    if target not in TARGETS:
        raise ValueError(f"--target {target}: the cost model has measurements for "
                         f"{', '.join(TARGETS)} only")
    points = measured_points() if points is None else points
    coefficients, margins = {}, {}
    for quantity in QUANTITIES:
        _, features, measured = _data(points, quantity)
        coefficients[quantity] = _solve(features, measured).tolist()
        margins[quantity] = max(float(abs(r["error"])) for r in leave_one_out(points, quantity))
    return CostModel(target, coefficients, len(points), margins)


def leave_one_out(points: list[Point], quantity: str = "instructions_per_step") -> list[dict]:
    """Each point predicted by a fit on all the others: ``{name, measured, predicted, error}``
    (error relative to the measured, signed)."""
    have, features, measured = _data(points, quantity)
    out = []
    for i, point in enumerate(have):
        keep = np.arange(len(have)) != i
        predicted = float(features[i] @ _solve(features[keep], measured[keep]))
        out.append({"name": point.name, "measured": float(measured[i]),
                    "predicted": predicted, "error": (predicted - measured[i]) / measured[i]})
    return out


def in_sample(points: list[Point], quantity: str = "instructions_per_step") -> list[dict]:
    """Each point predicted by the fit on all of them (itself included)."""
    have, features, measured = _data(points, quantity)
    coef = _solve(features, measured)
    return [{"name": p.name, "measured": float(m), "predicted": float(f @ coef),
             "error": float((f @ coef - m) / m)} for p, f, m in zip(have, features, measured)]


def main(argv=None) -> int:
    """Print the leave-one-out check of every quantity (``python -m zoo.experiments.cost_model``)."""
    points = measured_points()
    for quantity in QUANTITIES:
        rows = leave_one_out(points, quantity)
        worst = max(rows, key=lambda r: abs(r["error"]))
        print(f"{quantity}: {len(rows)} measured points, leave-one-out worst "
              f"{100 * worst['error']:+.1f} % ({worst['name']}: predicted "
              f"{worst['predicted']:,.0f}, measured {worst['measured']:,.0f}); in-sample worst "
              f"{100 * max(abs(r['error']) for r in in_sample(points, quantity)):.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
