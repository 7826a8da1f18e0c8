"""The frontier's plot (`zoo.experiments.frontier`, issue 50 item 3): CV accuracy against
Cortex-M4 instructions per window of signal (log; per second of signal on the top axis) and
against flash, the issue's goal drawn as the corner to reach.

Readable with dozens of graphs: only the non-dominated points of each panel (no other point
is both cheaper and more accurate) and the shipped tags get a written label; every other point
gets its number, the key to which is the table beside the plot in the document (`key_table`). Each label is
placed by measuring its box with matplotlib's renderer: the first spot around its point (closer
first, a thin line back to the point when farther) whose box overlaps no label already placed,
no marker and stays inside the panel; a label with no such spot is left out and reported.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
from pathlib import Path

from zoo.experiments.benchmarks.realscale import mean_sd

# Colour per model family (the SiRNN and its iRNN parent share one); int8 (QAT) graphs are
# filled squares, float graphs hollow circles.
FAMILY_COLORS = {"sirnn": "tab:blue", "irnn": "tab:blue", "gru": "tab:orange",
                 "lstm": "tab:red", "fastgrnn": "tab:purple", "fastrnn": "tab:brown"}
GOAL_COLOR = "tab:green"
LABEL_SIZE = 7  # points, the labels' and the numbers' font
# Offsets tried around a point, in points: the eight directions at growing distances.
_DIRECTIONS = ((1, 0), (1, 1), (1, -1), (-1, 0), (-1, 1), (-1, -1), (0, 1), (0, -1))
_RADII = (4, 10, 18, 28, 40, 55, 75, 100, 130, 170)
_MARKER_HALF = 4.0  # half the side of a marker's box, in points


@dataclasses.dataclass(frozen=True)
class Point:
    """One graph of the plot: its number in the key, costs, CV accuracy and how it is drawn."""

    number: int
    per_window: float
    flash: float | None
    accuracy: float
    sd: float
    graph: str            # a short name of the graph (`frontier.describe`)
    family: str           # the model, for the colour
    quantized: bool       # an int8 (QAT) graph
    shipped: str | None = None  # the shipped tag whose figures these are


@dataclasses.dataclass(frozen=True)
class Goal:
    """A task's device goal: the most instructions per window and flash bytes, the least CV
    accuracy % (None: no bound on that axis), and the sentence that states it."""

    per_window: float | None
    flash: float | None
    accuracy: float | None
    text: str


def non_dominated(points: list[Point], cost: str) -> list[Point]:
    """The points no other point beats: none as cheap (``cost``: a Point field) and as
    accurate, and better in one of the two."""
    def beats(a, b):
        ca, cb = getattr(a, cost), getattr(b, cost)
        return ca <= cb and a.accuracy >= b.accuracy and (ca < cb or a.accuracy > b.accuracy)

    have = [p for p in points if getattr(p, cost) is not None]
    return [p for p in have if not any(beats(q, p) for q in have if q is not p)]


def compact(value: float, _position=None) -> str:
    """A tick label: 250k, 1.5M, 800."""
    for divisor, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= divisor:
            return f"{value / divisor:g}{suffix}"
    return f"{value:g}"


def _log_axis(axis) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(compact))
    axis.set_minor_locator(LogLocator(base=10, subs="auto"))
    axis.set_minor_formatter(NullFormatter())


def text_box(text, renderer):
    """The display-space box of a text artist's own text (an annotation's line left out)."""
    from matplotlib.text import Text

    if hasattr(text, "update_positions"):  # an annotation places its text when drawn
        text.update_positions(renderer)
    return Text.get_window_extent(text, renderer)


def place_labels(ax, items, renderer) -> list[str]:
    """Place each ``(x, y, text)`` near its point (data coordinates) as the module's
    docstring says; returns the texts that found no spot."""
    from matplotlib.transforms import Bbox

    inside = ax.get_window_extent(renderer).padded(-2)
    half = _MARKER_HALF * ax.figure.dpi / 72  # points -> display pixels
    # the markers are obstacles; error bars are not (close points' bars would push every
    # label far away)
    taken = [Bbox.from_extents(px - half, py - half, px + half, py + half)
             for px, py in (ax.transData.transform((x, y)) for x, y, *_ in items)]
    left_out = []
    for x, y, text in items:
        box = _spot(ax, (x, y), text, inside, taken, renderer)
        if box is None:
            left_out.append(text)
        else:
            taken.append(box)
    return left_out


def _spot(ax, xy, text, inside, taken, renderer):
    """The box of ``text`` at the first offset (nearest first) where it fits, else None."""
    for radius in _RADII:
        for direction in _DIRECTIONS:
            box = _try(ax, xy, text, direction, radius, inside, taken, renderer)
            if box is not None:
                return box
    return None


def _try(ax, xy, text, direction, radius, inside, taken, renderer):
    """The box of ``text`` annotated at ``radius`` points from ``xy`` towards ``direction``
    if it fits (the annotation kept), else None (the annotation removed)."""
    dx, dy = direction
    line = dict(arrowstyle="-", color="0.55", linewidth=0.5, shrinkA=0, shrinkB=3)
    annotation = ax.annotate(
        text, xy, xytext=(dx * radius, dy * radius), textcoords="offset points",
        fontsize=LABEL_SIZE,
        ha={1: "left", -1: "right", 0: "center"}[dx], va={1: "bottom", -1: "top", 0: "center"}[dy],
        arrowprops=line if radius > 10 else None, zorder=5)
    box = text_box(annotation, renderer)
    if inside.containsx(box.x0) and inside.containsx(box.x1) and inside.containsy(box.y0) \
            and inside.containsy(box.y1) and not any(_overlap(box, t) for t in taken):
        return box
    annotation.remove()
    return None


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def draw(points: list[Point], goal: Goal, *, seconds: float, title: str):
    """The two panels as a Figure (not saved): accuracy against instructions per window (per
    second of signal on top) and against flash. Returns (figure, the labels left out)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 7.2), dpi=120)
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2, sharey=True)
    panels = ((axes[0], "per_window", goal.per_window,
               f"Cortex-M4 instructions per {seconds:g} s window (C backend, -O2)"),
              (axes[1], "flash", goal.flash, "flash bytes (C backend, -Os)"))
    for ax, cost, bound, xlabel in panels:
        shown = [p for p in points if getattr(p, cost) is not None]
        for p in shown:
            _marker(ax, p, getattr(p, cost))
        ax.set_xscale("log")
        _limits(ax, [getattr(p, cost) for p in shown] + [bound], points, goal.accuracy)
        _goal(ax, bound, goal.accuracy)
        _log_axis(ax.xaxis)
        ax.set_xlabel(xlabel)
        ax.grid(True, which="major", alpha=0.3)
    top = axes[0].secondary_xaxis("top", functions=(lambda w: w / seconds,
                                                     lambda s: s * seconds))
    _log_axis(top.xaxis)
    top.set_xlabel("instructions per second of signal")
    axes[0].set_ylabel("subject-CV validation accuracy % (mean ± sd over folds)")
    fig.suptitle(f"{title}: upper left is better. Labelled: the points no other beats on both "
                 "axes, and the shipped tags; numbered: the others (the key beside the plot)",
                 fontsize=10)
    handles = _legend(points, goal)
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 5), fontsize=8,
               frameon=False)
    fig.tight_layout(rect=(0, 0.09, 1, 1))  # the legend's strip below the panels
    renderer = fig.canvas.get_renderer()
    left_out = []
    for ax, cost, _, _ in panels:
        left_out += place_labels(ax, _label_items(points, cost), renderer)
    return fig, left_out


def _label_items(points: list[Point], cost: str) -> list[tuple]:
    """(x, y, text) per point of the panel: a written label for the non-dominated points
    and the shipped tags (cheapest first), then the others' numbers."""
    front = {p.number for p in non_dominated(points, cost)}
    shown = sorted((p for p in points if getattr(p, cost) is not None),
                   key=lambda p: (p.number not in front and not p.shipped, getattr(p, cost)))
    return [(getattr(p, cost), p.accuracy,
             # the point is the graph's best CV variant, not necessarily the tag's own recipe
             f"{p.number} {p.shipped}'s graph" if p.shipped else
             f"{p.number} {p.graph}" if p.number in front else str(p.number)) for p in shown]


def _marker(ax, p: Point, x: float) -> None:
    color = FAMILY_COLORS.get(p.family, "tab:gray")
    ax.errorbar(x, p.accuracy, yerr=p.sd, fmt="s" if p.quantized else "o", color=color,
                markerfacecolor=color if p.quantized else "white", markeredgecolor=color,
                markersize=5, elinewidth=0.7, alpha=0.85, capsize=2, zorder=3)


def _limits(ax, costs: list, points: list[Point], accuracy: float | None) -> None:
    """Room around the points and the goal: half a decade of cost each side, half a point of
    accuracy beyond the error bars."""
    costs = [c for c in costs if c is not None] or [1.0]
    ax.set_xlim(min(costs) / 1.8, max(costs) * 1.8)
    low = [p.accuracy - p.sd for p in points] + ([accuracy] if accuracy is not None else [])
    high = [p.accuracy + p.sd for p in points] + ([accuracy] if accuracy is not None else [])
    ax.set_ylim(min(low, default=0.0) - 0.5, max(high, default=100.0) + 0.5)


def _goal(ax, bound: float | None, accuracy: float | None) -> None:
    """The goal's corner shaded (cheaper than ``bound``, at least ``accuracy``), its edges
    dashed."""
    if bound is None and accuracy is None:
        return
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    ax.fill_between([x0, bound if bound is not None else x1], accuracy if accuracy is not None
                    else y0, y1, color=GOAL_COLOR, alpha=0.1, linewidth=0, zorder=0)
    if bound is not None:
        ax.axvline(bound, color=GOAL_COLOR, linestyle="--", linewidth=1, zorder=1)
    if accuracy is not None:
        ax.axhline(accuracy, color=GOAL_COLOR, linestyle="--", linewidth=1, zorder=1)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)


def _legend(points: list[Point], goal: Goal) -> list:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    families = dict.fromkeys(p.family for p in points)
    handles = [Line2D([], [], marker="o", linestyle="", color=FAMILY_COLORS.get(f, "tab:gray"),
                      label=f) for f in families]
    handles += [Line2D([], [], marker="s", linestyle="", color="0.3", label="int8 (QAT) graph"),
                Line2D([], [], marker="o", linestyle="", color="0.3", markerfacecolor="white",
                       label="float graph")]
    bounds = [f">= {goal.accuracy:g} %" if goal.accuracy is not None else None,
              f"<= {goal.per_window:,.0f} instructions / window" if goal.per_window else None,
              f"<= {goal.flash:,.0f} B flash" if goal.flash else None]
    if any(bounds):
        handles.append(Patch(color=GOAL_COLOR, alpha=0.25,
                             label="goal: " + ", ".join(b for b in bounds if b)))
    return handles


def save(fig, path: Path) -> None:
    """Write ``fig`` at its own size and resolution (the labels were placed for them)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


# The frontier's rows (`zoo.experiments.frontier.frontier_rows`) as points and a key.

def plotted(rows: list[dict]) -> list[dict]:
    """One point per measured graph: of its rows with a CV accuracy, the best one with the most
    folds done (a graph's training levers share its cost; the table lists them all)."""
    best: dict[str, dict] = {}
    for r in rows:
        if not r["accuracy"] or r["device"].get("cortex_m4_instructions_per_step_O2") is None:
            continue
        rank = (len(r["folds"]), statistics.mean(r["accuracy"]))
        held = best.get(r["device_key"])
        if held is None or rank > (len(held["folds"]), statistics.mean(held["accuracy"])):
            best[r["device_key"]] = r
    return [r for r in rows if best.get(r["device_key"]) is r]


def plot_points(rows: list[dict]) -> list[Point]:
    """`plotted` as the plot draws them, numbered in the rows' order (instructions per
    window)."""
    points = []
    for number, r in enumerate(plotted(rows), 1):
        fig, options = r["device"], r["device"].get("model_options", {})
        shipped = r["device_key"].removeprefix("card: ") if fig.get("shipped") else None
        if shipped and fig.get("earlier_generation"):
            shipped += " (earlier generation)"
        points.append(Point(
            number=number, per_window=r["per_window"], flash=fig.get("cortex_m4_flash_bytes_Os"),
            accuracy=statistics.mean(r["accuracy"]),
            sd=statistics.stdev(r["accuracy"]) if len(r["accuracy"]) > 1 else 0.0,
            graph=r["graph"], family=fig.get("model", "?"), quantized=bool(options.get("qat")),
            shipped=shipped))
    return points


def write_plot(rows: list[dict], path: Path, goal: Goal, *, seconds: float, title: str) -> int:
    """`draw` of the plotted rows, written to ``path``; returns the number of points drawn. A
    label left out for want of room is said on stderr (its number is in the key table)."""
    points = plot_points(rows)
    fig, left_out = draw(points, goal, seconds=seconds, title=title)
    save(fig, path)
    for text in left_out:
        print(f"note: {path}: no room for the label {text!r}", file=sys.stderr)
    return len(points)


def key_table(rows: list[dict]) -> str:
    """The plot's key: each numbered point, its device variant and best CV variant, and in
    which panel it is non-dominated."""
    points = plot_points(rows)
    fronts = {cost: {p.number for p in non_dominated(points, cost)}
              for cost in ("per_window", "flash")}
    lines = ["| # | graph | device variant | best CV variant | CV val % | folds | "
             "instructions / window | / second | flash (B) | non-dominated in |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for p, r in zip(points, plotted(rows)):
        front = " and ".join(name for cost, name in (("per_window", "instructions"),
                                                      ("flash", "flash"))
                             if p.number in fronts[cost]) or "-"
        lines.append(f"| {p.number} | {r['graph']} | {r['device_key']} | {r['cv']} | "
                     f"{mean_sd(r['accuracy'])} | {len(r['folds'])} / {r['planned']} | "
                     f"{_count(r['per_window'])} | {_count(r['per_second'])} | "
                     f"{_count(p.flash)} | {front} |")
    return "\n".join(lines) + "\n"


def _count(value) -> str:
    return "-" if value is None else f"{value:,.0f}"
