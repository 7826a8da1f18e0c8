"""c_cards.py [--write] [TAG ...]: the C backend's figures for every shipped int8 step tag (or the
TAGs named), measured here: `zoo export models/pretrained/TAG --form c`, then
`measurement.c_firmware` (flash: -Os, the smallest program running the model once minus an empty
one; RAM: state + the deepest stack frame chain from -fstack-usage; instructions per step under
qemu-arm: -O2, net of the driver's loop). --write puts them in each card.json as export.c
through the card type (`zoo.export.ship.record_c_figures`: checked, atomic, under the tag's
lock; card.json is not among the hashed files)."""

import argparse
import json
import os
import tempfile
from pathlib import Path

import measurement

REPO = Path(__file__).resolve().parents[2]
PRE = REPO / "models" / "pretrained"


def measure(tag: str, work: Path) -> dict:
    c = work / tag
    measurement.sh(["zoo", "export", PRE / tag, "--tflite", "--form", "c", "--out", c])
    summary = json.loads((c / "c_check.json").read_text())
    fig = measurement.c_firmware(c, tag, work / "build")
    return {"const_bytes": summary["const_bytes"], "state_bytes": summary["state_bytes"],
            "cortex_m4_flash_bytes_Os": fig["cortex_m4_flash_bytes_Os"],
            "cortex_m4_ram_bytes": fig["cortex_m4_ram_bytes"],
            "cortex_m4_instructions_per_step_O2": fig["cortex_m4_instructions_per_step_O2"],
            "bit_exact_with": summary["bit_exact_with"],
            "measured_by": "python tools/cortexm/c_cards.py (arm-none-eabi-gcc 12.2, qemu-arm 7.2)"}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--write", action="store_true", help="put the figures in each card.json")
    p.add_argument("tags", nargs="*", metavar="TAG")
    args = p.parse_args(argv)
    shipped = sorted(t for t in os.listdir(PRE) if (PRE / t / "export-step-int8").is_dir())
    unknown = sorted(set(args.tags) - set(shipped))
    if unknown:
        p.error(f"no shipped int8 step tag {unknown}; valid: {', '.join(shipped)}")
    measurement.ensure_plugin()
    with tempfile.TemporaryDirectory() as work:
        print("| tag | C constants (B) | Cortex-M4 flash, -Os (B) | RAM (B) | instructions / step, -O2 |")
        print("|---|---|---|---|---|")
        for tag in args.tags or shipped:
            fig = measure(tag, Path(work))
            print(f"| `{tag}` | {fig['const_bytes']:,} | {fig['cortex_m4_flash_bytes_Os']:,} | "
                  f"{fig['cortex_m4_ram_bytes']:,} | {fig['cortex_m4_instructions_per_step_O2']:,.1f} |",
                  flush=True)
            if args.write:
                from zoo.export.ship import record_c_figures

                record_c_figures(PRE / tag, fig)


if __name__ == "__main__":
    main()
