"""A device-cost model fitted to measured C costs: what a configuration will cost on a target
(instructions per step, per window and per second, flash and RAM) before it is trained.

The measurements are the Cortex-M4 figures of the zoo's C backend (``zoo export --form c``,
counted under qemu-arm): the package's own points file ``experiments/cost_data/points.json``
(`cost_points`: the frontier's recorded variants copied in, and small models measured by zoo
profile's engine) and every shipped step-model tag's card (``models/pretrained/*/card.json``;
a keyword tag's figures are its whole hop, front end included, and are left out). Each configuration is described by the matrix products one recurrent step computes
(`matrix_products`, the same products `zoo.macs` counts), and the fit is linear least squares,
weighted by 1 / measured (relative error), on these features:

* instructions per step = a * MACs + b * matrix output rows + c_cell * units + d
  (MACs: the multiply-accumulates; rows: each product's output length, which pays the int8
  kernel's per-row requantisation; units times a per-cell-family coefficient: the element-wise
  gates, the state's clipping and requantisation: a GRU has three gates, a SiRNN one);
* head instructions (once per window) = a * units * classes + b * units + c;
* flash bytes (-Os) = a * parameters + b * output rows + c_cell * units + d * products + e;
* RAM bytes = c_cell * units + a * input width + b * classes + d.

Another target of zoo profile (Cortex-M0+, M3, M7, M33, M55, RV32IMC) scales the M4 model by
one ratio per quantity (instructions, flash, RAM), fitted by least squares (relative errors) to
the step-model tags' figures on that target (the cards' ``cost.targets``); `target_leave_one_out`
leaves a tag out of both the M4 fit and the ratio, and a target whose instructions are worse
than 15 % that way is refused.

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

from zoo.export.profile.targets import TARGETS as PROFILE_TARGETS
from zoo.pretrained_card import PretrainedCfg, TargetCost, read_tag_card

# the measured points, the frontier's included (python -m zoo.experiments.cost_points)
POINTS_FILE = Path(__file__).resolve().parent / "cost_data" / "points.json"
CELL_MODELS = {"IRNNCell": "sirnn", "FastGRNNCell": "fastgrnn", "GRUCell": "gru"}
FAMILIES = ("sirnn", "fastgrnn", "gru")
REFERENCE = "cortex-m4"  # the target the linear model is fitted on; the others scale it
TARGETS = tuple(PROFILE_TARGETS)  # zoo profile's cores
MAX_TARGET_ERROR = 0.15  # a target whose leave-one-out error is worse is refused
# what a target's ratio scales: instructions (per step, window and second alike), flash, RAM
SCALED = {"instructions_per_step": "instructions_per_step",
          "instructions_per_window": "instructions_per_step",
          "instructions_per_second": "instructions_per_step",
          "flash_bytes": "flash_bytes", "ram_bytes": "ram_bytes"}


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


def measured_points(cards: Path | None = None, path: Path | None = None) -> list[Point]:
    """Every recorded Cortex-M4 C measurement (the points file, then the cards), a point that
    repeats an earlier one's configuration and instruction count only once."""
    points = recorded_points(POINTS_FILE if path is None else path) + card_points(cards)
    unique, seen = [], set()
    for p in points:
        key = (p.model, p.input_width, p.instructions_per_step,
               json.dumps(matrix_products(p.model, p.options, p.input_width)))
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def recorded_points(path: Path = POINTS_FILE) -> list[Point]:
    """The points of ``experiments/cost_data/points.json`` (`cost_points`)."""
    if not Path(path).is_file():
        return []
    return [Point(name, p["model"], p["options"], p["input_width"], p["classes"],
                  p["instructions_per_step"], p.get("head_instructions"), p["flash_bytes"],
                  p["ram_bytes"])
            for name, p in sorted(json.loads(Path(path).read_text())["points"].items())]


def _cards_folder(cards: Path | None) -> Path:
    """``cards``, or the installed tags' folder (zoo.models/pretrained)."""
    if cards is not None:
        return Path(cards)
    from importlib.resources import files

    return Path(str(files("zoo.models") / "pretrained"))


def _is_keyword(card: PretrainedCfg) -> bool:
    """A keyword tag's card: its C figures are the whole hop, front end included (zoo ship
    --profile), which the cost model of a step model does not price."""
    return bool(card.cost.frontend_instructions_per_second)


def card_points(cards: Path | None = None) -> list[Point]:
    """The shipped tags whose cards hold Cortex-M4 C figures (their instructions per step)."""
    points = []
    for path in sorted(_cards_folder(cards).glob("*/card.json")):
        card = read_tag_card(path)
        c = card.export.c
        if not c or card.model not in FAMILIES or _is_keyword(card):
            continue
        width = card.model_input_shape[-1]  # a step's width: frames_per_step samples' channels
        points.append(Point(f"{card.tag} (card)", card.model,
                            card.training["model_options"], width, card.num_classes,
                            c.cortex_m4_instructions_per_step_O2, None,
                            c.cortex_m4_flash_bytes_Os, c.cortex_m4_ram_bytes))
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
    # quantity -> the target's ratio to the Cortex-M4 model (`SCALED`; empty on the M4)
    scale: dict = dataclasses.field(default_factory=dict)

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
        if self.scale:
            cost = {k: (None if v is None else round(v * self.scale[SCALED[k]]))
                    for k, v in cost.items()}
        return cost


def _reference_fit(points: list[Point]) -> dict:
    """The Cortex-M4 coefficients of every quantity fitted to ``points``."""
    return {q: _solve(*_data(points, q)[1:]).tolist() for q in QUANTITIES}


def fit(points: list[Point] | None = None, target: str = REFERENCE) -> CostModel:
    """The cost model of ``target`` fitted to ``points`` (default: every recorded one); a
    target other than the Cortex-M4 scales the M4 model by its ratios (`target_ratios`) and is
    refused (ValueError, one line) when its leave-one-out error is worse than 15 %."""
    if target not in TARGETS:
        raise ValueError(f"--target {target}: valid targets are {', '.join(TARGETS)}")
    points = measured_points() if points is None else points
    margins = {q: max(float(abs(r["error"])) for r in leave_one_out(points, q))
               for q in QUANTITIES}
    model = CostModel(REFERENCE, _reference_fit(points), len(points), margins)
    if target == REFERENCE:
        return model
    pairs = target_pairs(target)
    scale = target_ratios(model, pairs)
    worst = {q: max(abs(r["error"]) for r in target_leave_one_out(points, pairs, q))
             for q in scale}
    if worst["instructions_per_step"] > MAX_TARGET_ERROR:
        raise ValueError(f"--target {target}: its cost model's leave-one-out error on "
                         f"instructions per step is {100 * worst['instructions_per_step']:.0f} "
                         f"% (over {100 * MAX_TARGET_ERROR:.0f} %); choose another target")
    # the guard: the target's own worst (4 large tags) or the M4 model's (every size), larger
    margins = {q: max(worst[q], model.margins[q]) for q in scale}
    return CostModel(target, model.coefficients, len(points), margins, scale)


def target_pairs(target: str, cards: Path | None = None) -> list[tuple[Point, TargetCost]]:
    """(the tag's configuration, its measured ``target`` figures) of every shipped step-model
    tag whose card holds zoo profile's figures of ``target`` (``cost.targets``). A keyword
    tag is left out: its figures are the whole hop, front end included, which the cost model
    does not price."""
    cards = _cards_folder(cards)
    pairs = []
    for point in card_points(cards):
        card = read_tag_card(cards / point.name.split(" ")[0] / "card.json")
        figures = (card.cost.targets or {}).get(target)
        if figures:
            pairs.append((point, figures))
    return pairs


def _ratio(predicted: np.ndarray, measured: np.ndarray) -> float:
    """The r minimising the relative errors of r * predicted against measured."""
    x = predicted / measured
    return float(x.sum() / (x * x).sum())


def _predicted(model: CostModel, point: Point, quantity: str) -> float:
    cost = model.predict(point.model, point.options, Shape(point.input_width, 1, point.classes))
    return float(cost[quantity])


def target_ratios(model: CostModel, pairs: list[tuple[Point, TargetCost]]) -> dict:
    """The target's ratio to the M4 ``model`` of instructions per step, flash and RAM, fitted
    by least squares (relative errors) on the tags' measured figures."""
    if len(pairs) < 2:
        raise ValueError("a target's cost model needs two measured tags at least")
    return {q: _ratio(np.array([_predicted(model, p, q) for p, _ in pairs]),
                      np.array([float(getattr(f, q)) for _, f in pairs]))
            for q in ("instructions_per_step", "flash_bytes", "ram_bytes")}


def target_leave_one_out(points: list[Point], pairs: list[tuple[Point, TargetCost]],
                         quantity: str = "instructions_per_step") -> list[dict]:
    """Each tag's ``quantity`` on the target predicted with that tag left out of both the M4
    fit (every point of its configuration) and the ratio: ``{name, measured, predicted,
    error}``."""
    out = []
    for i, (point, figures) in enumerate(pairs):
        same = json.dumps(matrix_products(point.model, point.options, point.input_width))
        rest = [p for p in points if json.dumps(matrix_products(
            p.model, p.options, p.input_width)) != same or p.input_width != point.input_width]
        reference = CostModel(REFERENCE, _reference_fit(rest), len(rest))
        others = [pair for j, pair in enumerate(pairs) if j != i]
        ratio = target_ratios(reference, others)[quantity]
        predicted = ratio * _predicted(reference, point, quantity)
        measured = float(getattr(figures, quantity))
        out.append({"name": point.name, "measured": measured, "predicted": predicted,
                    "error": (predicted - measured) / measured})
    return out


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
    """Print the leave-one-out check of every quantity and of every target's instructions
    per step (``python -m zoo.experiments.cost_model``)."""
    points = measured_points()
    for quantity in QUANTITIES:
        rows = leave_one_out(points, quantity)
        worst = max(rows, key=lambda r: abs(r["error"]))
        print(f"{quantity}: {len(rows)} measured points, leave-one-out worst "
              f"{100 * worst['error']:+.1f} % ({worst['name']}: predicted "
              f"{worst['predicted']:,.0f}, measured {worst['measured']:,.0f}); in-sample worst "
              f"{100 * max(abs(r['error']) for r in in_sample(points, quantity)):.1f} %")
    for target in TARGETS:
        if target == REFERENCE:
            continue
        pairs = target_pairs(target)
        ratios = target_ratios(CostModel(REFERENCE, _reference_fit(points), len(points)), pairs)
        line = [f"{target}: {ratios['instructions_per_step']:.3f} x the M4's instructions"]
        for quantity in ("instructions_per_step", "flash_bytes", "ram_bytes"):
            rows = target_leave_one_out(points, pairs, quantity)
            worst = max(rows, key=lambda r: abs(r["error"]))
            line.append(f"{quantity} leave-one-out worst {100 * worst['error']:+.1f} % "
                        f"({worst['name']})")
        print(f"{'; '.join(line)} on {len(pairs)} tags", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
