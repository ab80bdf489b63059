"""Leave-one-source-out accuracy of the LLM step model on the whole validation corpus.

    .venv/bin/python benchmarks/llm_loso.py [--iterations N] [--write] [--sources a,b]

Loads every dev training set through costmodels.validation.corpus.load_corpus (vTrain,
Narayanan Table 1, Korthikanti, torchtitan, nanotron, llm-foundry MPT FSDP, DGX Cloud Megatron
H100) and prints, per source:

- ``shipped``: MAPE with the constants shipped in costmodels/data/ (fitted on some sources);
- ``in-sample``: MAPE with every constant fitted jointly on every source
  (costmodels.validation.loso.fit_on, each source weighted alike);
- ``LOSO``: MAPE with every constant refitted without the source (the headline number);
- ``flat-gen``: one share of peak per GPU generation fitted on the other sources;
- ``flat-50``: every step at 50 % of the dense peak (llm-analysis' default);
- ``no-fit`` / ``maybe``: how many runs of the source (all of which ran) the model judges "does
  not fit" / "may not fit" (costmodels.llm.memory.memory_verdict).

Then the same errors per regime tag (generation, framework, precision, parallel mechanisms,
scale). ``--write`` stores each row's LOSO log error with its tags in
costmodels/data/llm-loso-residuals.json (the error bands' input, costmodels/validation/bands.py).
Time: about 9 LM fits of ~200 model evaluations over ~1,000 rows (~0.3 s each): ~10 minutes on
a shared 2-core VM. Dev data only.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from costmodels.safe_output import json_text, write_atomic  # noqa: E402
from costmodels.validation.corpus import SOURCES, load_corpus  # noqa: E402
from costmodels.validation.loso import (  # noqa: E402
    FLAT_DEFAULT,
    fit_on,
    flat_by_generation,
    flat_time,
    log_errors,
    loso,
    mape,
    predict,
)

RESIDUALS = ROOT / "costmodels" / "data" / "llm-loso-residuals.json"
REGIME_TAGS = ("generation", "framework", "precision", "moe", "scale", "seq", "recompute")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=25)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--sources", default=",".join(SOURCES))
    args = parser.parse_args()
    started = time.time()
    sources = tuple(args.sources.split(","))
    corpus = load_corpus(sources)
    shipped = log_errors(corpus)
    verdicts = [predict(r).memory_verdict for r in corpus]
    print(f"{len(corpus)} rows; shipped constants predicted in {time.time() - started:.0f} s",
          flush=True)  # fmt: skip
    joint = fit_on(corpus, iterations=args.iterations)
    in_sample = log_errors(corpus, joint.constants)
    print(f"joint fit: {joint.evaluations} evaluations, {time.time() - started:.0f} s", flush=True)
    held: dict[int, float] = {}
    flat_gen: dict[int, float] = {}
    for source, fitted in loso(corpus, sources, iterations=args.iterations).items():
        idx = [i for i, r in enumerate(corpus) if r.source == source]
        errs = log_errors([corpus[i] for i in idx], fitted.constants)
        shares = flat_by_generation([r for r in corpus if r.source != source])
        for i, e in zip(idx, errs, strict=True):
            held[i] = float(e)
            share = shares.get(corpus[i].tags["generation"], FLAT_DEFAULT)
            flat_gen[i] = math.log(flat_time(corpus[i], share) / corpus[i].measured_s)
        print(f"  LOSO {source}: {fitted.evaluations} evaluations, {time.time() - started:.0f} s",
              flush=True)  # fmt: skip
    flat50 = [math.log(flat_time(r, FLAT_DEFAULT) / r.measured_s) for r in corpus]

    def row(name: str, idx: list[int]) -> str:
        cols = [mape(shipped[idx]), mape(in_sample[idx]), mape(held[i] for i in idx),
                mape(flat_gen[i] for i in idx), mape(flat50[i] for i in idx)]  # fmt: skip
        hard = sum(verdicts[i] == "does not fit" for i in idx)
        maybe = sum(verdicts[i] == "may not fit" for i in idx)
        return (f"{name:<26}{len(idx):>5}" + "".join(f"{c:>10.1f}" for c in cols)
                + f"{hard:>8}{maybe:>8}")

    names = ("shipped", "in-sample", "LOSO", "flat-gen", "flat-50")
    head = f"{'':<26}{'rows':>5}" + "".join(f"{h:>10}" for h in names)
    head += f"{'no-fit':>8}{'maybe':>8}"
    print("\nMAPE % of step time per source (LOSO = every constant refitted without it)")
    print(head)
    for source in sources:
        print(row(source, [i for i, r in enumerate(corpus) if r.source == source]))
    print(row("all", list(range(len(corpus)))))
    for tag in REGIME_TAGS:
        groups: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(corpus):
            groups[r.tags[tag]].append(i)
        print(f"\nper {tag}")
        for value in sorted(groups):
            print(row(value, groups[value]))
    if args.write:
        record = {"method": "benchmarks/llm_loso.py: log(predicted/measured) of each dev row "
                  "with every constant refitted without the row's source",
                  "rows": [{"source": r.source, "label": r.label, "tags": r.tags,
                            "loso_log_error": held[i], "in_sample_log_error": float(in_sample[i])}
                           for i, r in enumerate(corpus)]}  # fmt: skip
        write_atomic(RESIDUALS, json_text(record, indent=1) + "\n")
        print(f"wrote {RESIDUALS.relative_to(ROOT)}")
    print(f"\n{time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
