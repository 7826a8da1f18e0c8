"""The frontier's plot (experiments/frontier_plot.py, issue 50 item 3): on a synthetic set of
close points, no two texts of a panel overlap (their boxes as matplotlib's renderer measures
them once the figure is drawn), every point is labelled or numbered, the non-dominated points
are the ones found by hand, and the issue's goals are the lines drawn."""

import pytest
from matplotlib.text import Text

from zoo.experiments import frontier
from zoo.experiments.frontier_plot import Goal, Point, draw, non_dominated

HAR2_GOAL = frontier.GOALS["har2"]


def _point(number, per_window, flash, accuracy, **extra):
    return Point(number=number, per_window=per_window, flash=flash, accuracy=accuracy, sd=1.5,
                 graph=f"sirnn {40 + number}u r16 lean QAT int8 8/step", family="sirnn",
                 quantized=number % 2 == 0, **extra)


def _crowd():
    """24 points within a few percent of each other on both axes (and a shipped tag among
    them): every label wants the same spot."""
    return [_point(n, 200_000 * (1 + 0.01 * n), 7_000 + 15 * n, 95.0 + 0.05 * (n % 7),
                   shipped="sirnn.har2" if n == 5 else None) for n in range(1, 25)]


def _texts(fig):
    """Per panel, (text, box) of every text in it, measured after a full draw."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [[(t.get_text(), Text.get_window_extent(t, renderer)) for t in ax.texts]
            for ax in fig.axes if ax.texts]


def test_no_two_labels_of_a_crowded_panel_overlap():
    points = _crowd()
    fig, left_out = draw(points, HAR2_GOAL, seconds=2.56, title="t")
    panels = _texts(fig)
    assert len(panels) == 2
    for ax, texts in zip(fig.axes, panels):
        frame = ax.get_window_extent()
        for i, (a, box_a) in enumerate(texts):
            assert frame.x0 <= box_a.x0 and box_a.x1 <= frame.x1, a  # inside its panel
            assert frame.y0 <= box_a.y0 and box_a.y1 <= frame.y1, a
            for b, box_b in texts[i + 1:]:
                assert not (box_a.x0 < box_b.x1 and box_b.x0 < box_a.x1
                            and box_a.y0 < box_b.y1 and box_b.y0 < box_a.y1), (a, b)
        # each point is written once per panel: its label or its number, or reported
        numbers = sorted(int(text.split()[0]) for text, _ in texts)
        missing = {p.number for p in points} - set(numbers)
        assert len(numbers) == len(set(numbers))
        assert missing <= {int(text.split()[0]) for text in left_out}
    assert len(left_out) <= 2, left_out  # the crowd fits, with lines back to the points
    written = {text for texts in panels for text, _ in texts}
    # the shipped tag by name, as its graph's point (the graph's best CV variant, not the tag's)
    assert "5 sirnn.har2's graph" in written


def test_the_labelled_points_are_the_non_dominated_ones():
    # by hand: 1 is cheapest, 2 is the most accurate, 3 is beaten by 2 (cheaper and better),
    # 4 by 1 on both; on flash, 3 is the cheapest and so on the frontier
    points = [_point(1, 100_000, 9_000, 90.0), _point(2, 200_000, 8_000, 95.0),
              _point(3, 300_000, 5_000, 94.0), _point(4, 150_000, 9_500, 89.0)]
    assert [p.number for p in non_dominated(points, "per_window")] == [1, 2]
    assert [p.number for p in non_dominated(points, "flash")] == [2, 3]
    fig, left_out = draw(points, HAR2_GOAL, seconds=2.56, title="t")
    assert left_out == []
    by_panel = [{text for text, _ in texts} for texts in _texts(fig)]
    assert by_panel[0] == {f"1 {points[0].graph}", f"2 {points[1].graph}", "3", "4"}
    assert by_panel[1] == {"1", f"2 {points[1].graph}", f"3 {points[2].graph}", "4"}


def _dashed(ax):
    """(vertical x values, horizontal y values) of the dashed lines of a panel."""
    lines = [line for line in ax.lines if line.get_linestyle() == "--"]
    vertical = [line.get_xdata()[0] for line in lines
                if line.get_xdata()[0] == line.get_xdata()[1]]
    horizontal = [line.get_ydata()[0] for line in lines
                  if line.get_ydata()[0] == line.get_ydata()[1]]
    return vertical, horizontal


@pytest.mark.parametrize("task, per_window, flash, accuracy", [
    ("har2", 250_000, 8_192, 96.5), ("dsa19", 500_000, None, 90.0)])
def test_the_goal_lines_are_issue_50s(task, per_window, flash, accuracy):
    goal = frontier.GOALS[task]
    assert (goal.per_window, goal.flash, goal.accuracy) == (per_window, flash, accuracy)
    fig, _ = draw(_crowd()[:3], goal, seconds=frontier.signal(task)[1], title=task)
    window_panel, flash_panel = fig.axes[:2]
    assert _dashed(window_panel) == ([per_window], [accuracy])
    assert _dashed(flash_panel) == ([flash] if flash else [], [accuracy])
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(f"<= {per_window:,} instructions / window" in t and f">= {accuracy:g} %" in t
               for t in legend), legend


def test_the_top_axis_is_per_second_of_signal():
    fig, _ = draw(_crowd()[:3], Goal(None, None, None, ""), seconds=2.56, title="t")
    top = fig.axes[0].child_axes[0]
    low, high = fig.axes[0].get_xlim()
    assert top.get_xlim() == pytest.approx((low / 2.56, high / 2.56))
