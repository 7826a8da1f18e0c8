"""c_cards.py [--write] [TAG ...]: the C backend's figures for every shipped int8 step tag (or the
TAGs named), measured by ``zoo profile`` (`zoo.export.profile`: the tag's C export cross-built
for every core, counted under QEMU, bit-exact with its host build). Prints the Cortex-M4 and
the cores without SIMD per step; --write records every core in each card.json (``zoo ship --tag
TAG --profile``, `zoo.export.ship.profile_tag`: checked, atomic, under the tag's lock;
card.json is not among the hashed files)."""

import argparse
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRE = REPO / "models" / "pretrained"
SHOWN = ("cortex-m0plus", "cortex-m4", "rv32imc")


def main(argv=None):
    from zoo.export.profile import profile
    from zoo.export.ship import profile_tag

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--write", action="store_true", help="record every core in each card.json")
    p.add_argument("tags", nargs="*", metavar="TAG")
    args = p.parse_args(argv)
    shipped = sorted(t for t in os.listdir(PRE) if (PRE / t / "export-step-int8").is_dir())
    unknown = sorted(set(args.tags) - set(shipped))
    if unknown:
        p.error(f"no shipped int8 step tag {unknown}; valid: {', '.join(shipped)}")
    print("| tag | " + " | ".join(f"{t} instructions / step" for t in SHOWN) + " | M4 flash (B) |")
    print("|---|" + "---|" * (len(SHOWN) + 1))
    for tag in args.tags or shipped:
        if args.write:
            targets = {k: v.to_dict() for k, v in profile_tag(tag).cost.targets.items()}
        else:
            targets = profile(str(PRE / tag), SHOWN)["targets"]
        print(f"| `{tag}` | " + " | ".join(f"{targets[t]['instructions_per_step']:,.1f}"
                                          for t in SHOWN)
              + f" | {targets['cortex-m4']['flash_bytes']:,} |", flush=True)


if __name__ == "__main__":
    main()
