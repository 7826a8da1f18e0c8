"""The frontier's plot (`zoo.experiments.frontier`, issue 50 item 3): CV accuracy against
Cortex-M4 instructions per window of signal (log; per second of signal on the top axis) and
against flash, the issue's goal drawn as the corner to reach.

Readable with dozens of graphs: only the non-dominated points of each panel (no other point
is both cheaper and more accurate) and the shipped tags get a written label; every other point
gets its number, the key to which is the table beside the plot in the document. Each label is
placed by measuring its box with matplotlib's renderer: the first spot around its point (closer
first, a thin line back to the point when farther) whose box overlaps no label already placed,
no marker and stays inside the panel; a label with no such spot is left out and reported.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

# Colour per model family (the SiRNN and its iRNN parent share one); int8 (QAT) graphs are
# filled squares, float graphs hollow circles.
FAMILY_COLORS = {"sirnn": "tab:blue", "irnn": "tab:blue", "gru": "tab:orange",
                 "lstm": "tab:red", "fastgrnn": "tab:purple", "fastrnn": "tab:brown"}
GOAL_COLOR = "tab:green"
LABEL_SIZE, NUMBER_SIZE = 7, 7
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


def overlapping_pairs(boxes) -> list[tuple[int, int]]:
    """Index pairs of boxes whose interiors overlap."""
    return [(i, j) for i, a in enumerate(boxes) for j, b in enumerate(boxes[i + 1:], i + 1)
            if _overlap(a, b)]


def place_labels(ax, items, renderer) -> list[str]:
    """Place each ``(x, y, text, size)`` near its point (data coordinates) as the module's
    docstring says; returns the texts that found no spot."""
    from matplotlib.transforms import Bbox

    inside = ax.get_window_extent(renderer).padded(-2)
    half = _MARKER_HALF * ax.figure.dpi / 72  # points -> display pixels
    # the markers are obstacles; error bars are not (close points' bars would push every
    # label far away)
    taken = [Bbox.from_extents(px - half, py - half, px + half, py + half)
             for px, py in (ax.transData.transform((x, y)) for x, y, *_ in items)]
    left_out = []
    for x, y, text, size in items:
        box = next((box for radius in _RADII for dx, dy in _DIRECTIONS
                    if (box := _try(ax, (x, y), text, size, (dx, dy), radius, inside, taken,
                                    renderer)) is not None), None)
        if box is None:
            left_out.append(text)
        else:
            taken.append(box)
    return left_out


def _try(ax, xy, text, size, direction, radius, inside, taken, renderer):
    """The box of ``text`` annotated at ``radius`` points from ``xy`` towards ``direction``
    if it fits (the annotation kept), else None (the annotation removed)."""
    dx, dy = direction
    line = dict(arrowstyle="-", color="0.55", linewidth=0.5, shrinkA=0, shrinkB=3)
    annotation = ax.annotate(
        text, xy, xytext=(dx * radius, dy * radius), textcoords="offset points", fontsize=size,
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

    fig = Figure(figsize=(13, 6.4), dpi=120)
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
    """(x, y, text, size) per point of the panel: a written label for the non-dominated points
    and the shipped tags (cheapest first), then the others' numbers."""
    front = {p.number for p in non_dominated(points, cost)}
    shown = sorted((p for p in points if getattr(p, cost) is not None),
                   key=lambda p: (p.number not in front and not p.shipped, getattr(p, cost)))
    return [(getattr(p, cost), p.accuracy,
             f"{p.number} {p.shipped}" if p.shipped else
             f"{p.number} {p.graph}" if p.number in front else str(p.number),
             LABEL_SIZE if p.shipped or p.number in front else NUMBER_SIZE) for p in shown]


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
