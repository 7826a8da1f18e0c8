"""``zoo profile TAG_OR_EXPORT_OR_RUN [--target T ...] [--board B] [--json]``: the exported C of a
model cross-built for each core and run under QEMU (`zoo.export.profile`): instructions per
step, per window and per second of signal, flash, RAM, and bit-exactness with the host build."""

from __future__ import annotations

import argparse
import json
import sys


def add_profile_arguments(parser: argparse.ArgumentParser) -> None:
    from zoo.export.profile.targets import TARGETS

    parser.add_argument("source", metavar="TAG_OR_EXPORT_OR_RUN",
                        help="an installed tag (sirnn.har2), a `zoo export --form c` folder, an "
                             "int8 step export, a run or tag folder, or a .keras model (with "
                             "--calibration); a C export is made in a temporary folder when "
                             "SOURCE is not one")
    parser.add_argument("--target", action="append", metavar="T", dest="targets", default=[],
                        help=f"a core to profile (repeat for several; default all): "
                             f"{', '.join(TARGETS)}")
    parser.add_argument("--board", metavar="B",
                        help="also say whether the model fits board B and the lower bound on its "
                             "time at B's clock (its core is profiled too)")
    parser.add_argument("--json", action="store_true",
                        help='print {"targets": {T: {instructions_per_step, '
                             "instructions_per_window, instructions_per_second, flash_bytes, "
                             "ram_bytes, bit_exact, ...}}} instead of the table")
    parser.add_argument("--calibration", metavar="FILE",
                        help="a .keras SOURCE: its raw input windows (.npy, or .npz with X), as "
                             "zoo export takes them")
    parser.add_argument("--labels", metavar="FILE",
                        help="a .keras SOURCE: class indices of the --calibration windows (.npy)")


def check_profile(args) -> None:
    """Target and board names, answered before anything is built."""
    from zoo.export.profile.boards import board_named
    from zoo.export.profile.targets import targets_named

    targets_named(args.targets)
    if args.board:
        board = board_named(args.board)
        if args.targets and board.target not in args.targets:
            args.targets.append(board.target)


def run_profile(args) -> int:
    from zoo.export.profile import ProfileError, profile
    from zoo.export.profile.boards import board_named, fit
    from zoo.export.profile.counting import MeasurementError

    progress = (lambda line: None) if args.quiet else (
        lambda line: print(f"zoo profile: {line}", file=sys.stderr, flush=True))
    try:
        result = profile(args.source, args.targets, calibration=args.calibration,
                         labels=args.labels, progress=progress)
    except (ProfileError, MeasurementError) as err:
        print(f"zoo profile: error: {err}", file=sys.stderr)
        return 2
    if args.board:
        board = board_named(args.board)
        result["board"] = fit(board, result["targets"][board.target])
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(table(result))
    mismatched = [t for t, v in result["targets"].items() if not v["bit_exact"]]
    if mismatched:
        print(f"zoo profile: error: not bit-exact with the host build on {', '.join(mismatched)}"
              f": {result['targets'][mismatched[0]]['mismatch']}", file=sys.stderr)
        return 1
    return 0


def _number(value, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def table(result: dict) -> str:
    """The human table: one row per target, the notes and the board's verdict below."""
    kws = result.get("kws")
    step = "instructions / hop" if kws else "instructions / step"
    lines = [f"{'target':<14} {step:>19} {'/ window':>12} {'/ second':>12} {'flash B':>8} "
             f"{'RAM B':>7}  bit-exact"]
    for name, v in result["targets"].items():
        lines.append(f"{name:<14} {_number(v['instructions_per_step'], 1):>19} "
                     f"{_number(v['instructions_per_window']):>12} "
                     f"{_number(v['instructions_per_second']):>12} {v['flash_bytes']:>8,} "
                     f"{v['ram_bytes']:>7,}  {'yes' if v['bit_exact'] else 'NO'}")
    if kws:
        lines.append("a hop: the integer front end, input map, step, head, posteriors and "
                     "recognizer (kws_app's 10 ms)")
    check = result["check"]
    what = "features and int8 logits" if kws else "int8 logits and state"
    lines.append(f"bit-exact: the same {what} as the host build on "
                 f"{check['windows']} {check['unit']} ({check['from']})")
    lines.extend(f"{name}: {v['note']}" for name, v in result["targets"].items() if v.get("note"))
    board = result.get("board")
    if board:
        lines.append(_board_line(board, "hop" if kws else "step"))
    lines.append("instructions are not cycles: -O2 builds counted under QEMU; flash and RAM at -Os")
    return "\n".join(lines)


def _board_line(board: dict, unit: str = "step") -> str:
    verdict = "fits" if board["fits"] else "does NOT fit"
    flash = ("external flash" if board["flash_bytes"] is None
             else f"flash {'ok' if board['flash_fits'] else 'too small'} ({board['flash_bytes']:,} B)")
    share = board["cpu_share_lower_bound"]
    time = (f"; at {board['clock_hz'] / 1e6:g} MHz at least {board['step_ms_lower_bound']:.3f} ms "
            f"a {unit}" + ("" if share is None else f", {100 * share:.2f} % of the CPU") +
            " (a lower bound: instructions are not cycles)")
    return (f"{board['board']} ({board['name']}, {board['target']}): {verdict}: {flash}, RAM "
            f"{'ok' if board['ram_fits'] else 'too small'} ({board['ram_bytes']:,} B){time}")
