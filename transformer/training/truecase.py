"""`python -m transformer.training.truecase --checkpoint DIR [--corpus NAME[=PATH] ...]`: learn the
truecase model (`transformer.casing`) from the corpora's English training sentences and add it to a
checkpoint that was exported without one. Training runs write it themselves."""
from __future__ import annotations

import argparse
from pathlib import Path

from transformer.casing import TRUECASE_FILE, Truecaser

from .corpora import parse_corpora


def main(argv: list[str] | None = None) -> Path:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--corpus", action="append", default=None, metavar="NAME[=PATH]",
                   help="a training corpus (default: tatoeba-en-de and multi30k)")
    p.add_argument("--lang", default="en")
    args = p.parse_args(argv)
    corpora = parse_corpora(args.corpus or ["tatoeba-en-de", "multi30k"])
    out = args.checkpoint / TRUECASE_FILE
    Truecaser.train([line for c in corpora for line in c.load("train", args.lang, args.lang)[0]], args.lang).save(out)
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    main()
