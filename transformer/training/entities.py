"""Do names and numbers survive translation? The share of a sentence set's names, places, numbers
and clock times that appear unchanged in the translation, for each way people type the sentence.

    python -m transformer.training.entities --checkpoint checkpoints/en-de [--file tests/data/names_numbers.tsv]

The file holds one sentence a line, a tab, and its entities separated by "|". A name must appear
as written (for lower-case input, in any case: nothing tells a truecaser that "greta" is a name);
a number digit for digit, not inside a longer number, with its separators, sign, currency and "%" as
typed ("1,250", "-12", "€3.50"); a clock time as "6:45" or in German notation "6.45".
"""
from __future__ import annotations

import argparse
import json
import re
import unicodedata
from pathlib import Path

from transformer.translator import Translator, load_pretrained

FORMS = {"as written": lambda s: s, "lower case": str.lower, "UPPER CASE": str.upper,
         "NFD": lambda s: unicodedata.normalize("NFD", s)}  # accents decomposed, as text pasted from macOS often is
DEFAULT_FILE = Path(__file__).resolve().parents[2] / "tests" / "data" / "names_numbers.tsv"
FORMS_FILE = DEFAULT_FILE.with_name("names_numbers_forms.tsv")  # separators, scripts, apostrophes, many names


def read_entity_set(path: str | Path) -> list[tuple[str, list[str]]]:
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            text, entities = line.split("\t")
            rows.append((text, entities.split("|")))
    return rows


def survives(entity: str, translation: str, any_case: bool = False) -> bool:
    """Whether `entity` appears in `translation` as a whole token (see the module docstring)."""
    if re.fullmatch(r"\d{1,2}:\d{2}", entity):
        hours, minutes = entity.split(":")
        return re.search(rf"(?<!\d){hours}[:.]{minutes}(?!\d)", translation) is not None
    if entity.isdigit():
        return re.search(rf"(?<![\d.,]){entity}(?![\d]|[.,]\d)", translation) is not None
    if any(c.isdigit() for c in entity):  # "1,250", "-12", "$18", "3rd": as typed, not inside a longer number
        return re.search(rf"(?<![\w.,]){re.escape(entity)}(?!\w|[.,]\d)", translation) is not None
    flags = re.IGNORECASE if any_case else 0
    return re.search(rf"(?<!\w){re.escape(entity)}(?!\w)", translation, flags) is not None


def entity_rates(translator: Translator, rows: list[tuple[str, list[str]]], forms: tuple[str, ...] = tuple(FORMS),
                 **decoding) -> dict:
    """For each input form (of FORMS): the share of entities kept, and the sentences that lost one."""
    result = {}
    for form in forms:
        rewrite = FORMS[form]
        outputs = translator.translate_batch([rewrite(text) for text, _ in rows], **decoding)
        kept = total = 0
        lost = []
        for (text, entities), out in zip(rows, outputs):
            ok = [survives(e, out, any_case=form == "lower case") for e in entities]
            kept, total = kept + sum(ok), total + len(ok)
            if not all(ok):
                lost.append({"source": rewrite(text), "translation": out})
        result[form] = {"rate": round(100 * kept / total, 1), "entities": total, "lost": lost}
    result["all forms"] = {"rate": round(sum(r["rate"] for r in result.values()) / len(forms), 1)}
    return result


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default="checkpoints/en-de")
    p.add_argument("--file", type=Path, default=DEFAULT_FILE, help=f"also: {FORMS_FILE.relative_to(FORMS_FILE.parents[2])}")
    p.add_argument("--method", choices=("greedy", "beam"), default="beam")
    p.add_argument("--beam-size", type=int, help="default: the checkpoint's (generation_config.json), else 5")
    p.add_argument("--length-penalty", type=float, help="default: the checkpoint's, chosen on val, else 0.6")
    p.add_argument("--show-lost", type=int, default=5, help="print this many lost sentences per form")
    args = p.parse_args(argv)
    translator = load_pretrained(args.checkpoint)
    rates = entity_rates(translator, read_entity_set(args.file), method=args.method,
                         beam_size=args.beam_size, length_penalty=args.length_penalty)
    for form, r in rates.items():
        print(f"{form}: {r['rate']} %" + (f" of {r['entities']} entities" if "entities" in r else ""))
        for miss in r.get("lost", [])[: args.show_lost]:
            print(f"    {miss['source']}  ->  {miss['translation']}")
    print(json.dumps({form: r["rate"] for form, r in rates.items()}))
    return rates


if __name__ == "__main__":
    main()
