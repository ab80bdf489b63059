"""Leave-one-source-out accuracy of the LLM step model on the whole validation corpus.

    .venv/bin/python benchmarks/llm_loso.py [--iterations N] [--write] [--sources a,b]

Loads every dev training set through costmodels.validation.corpus.load_corpus (vTrain,
Narayanan Table 1, Korthikanti, torchtitan, nanotron, llm-foundry MPT FSDP, DGX Cloud Megatron
H100) and prints, per source:

- ``shipped``: MAPE with the constants shipped in costmodels/data/ (fitted on some sources);
- ``in-sample``: MAPE with every constant fitted jointly on every source
  (costmodels.validation.loso.fit_on, each source weighted alike; vTrain's rows enter the fit
  through every eighth row, ``fit_sample``, to keep a fit to minutes: its weight is the same);
- ``LOSO``: MAPE with every constant refitted without the source (the headline number);
- ``flat-gen``: one share of peak per GPU generation fitted on the other sources;
- ``flat-50``: every step at 50 % of the dense peak (llm-analysis' default);
- ``no-fit`` / ``maybe``: how many runs of the source (all of which ran) the model judges "does
  not fit" / "may not fit" (costmodels.llm.memory.memory_verdict).

Then the same errors per regime tag (generation, framework, precision, parallel mechanisms,
scale), and the coverage of the error bands per source: the share of LOSO errors inside the
band of their combination of mechanisms (costmodels/llm/combination_bands.held_out_band) built
from every source, and built without the run's own source (the honest one: what a run from a
source never seen gets). ``--write`` stores each run's LOSO error, mechanisms, measured step
and held-out and in-sample predictions in costmodels/data/llm-loso-bands.json (the bands' input
and the Validation page's plot), and the MFU ceilings with the fitted saturation order in
costmodels/data/llm-mfu-ceilings.json.
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

from costmodels.llm.combination_bands import (  # noqa: E402
    LOSO_BANDS,
    MIN_ROWS,
    DevResidual,
    held_out_band,
)
from costmodels.llm.constants import CEILINGS_DATA, MFU_CEILINGS  # noqa: E402
from costmodels.llm.error_bands import HOST_BOUND_SHARE, mechanisms  # noqa: E402
from costmodels.safe_output import json_text, write_atomic  # noqa: E402
from costmodels.validation.corpus import SOURCES, CorpusRow, load_corpus  # noqa: E402
from costmodels.validation.loso import (  # noqa: E402
    FLAT_DEFAULT,
    ceiling_name,
    fit_on,
    flat_by_generation,
    flat_time,
    log_errors,
    mape,
    measured_ceilings,
    model_mfu,
    predict,
)

REGIME_TAGS = ("generation", "framework", "precision", "moe", "scale", "seq", "recompute")


def mechanisms_of(row: CorpusRow, host_share: float) -> tuple[str, ...]:
    """The mechanisms of the row's shipped prediction (``host_share``: its host_bound_share)."""
    return mechanisms(row.shape, row.layout, row.cluster, row.options["precision"],
                      row.options["framework"], row.options.get("recipe"),
                      host_share >= HOST_BOUND_SHARE)  # fmt: skip


def coverage(residuals: tuple[DevResidual, ...]) -> dict[str, tuple[int, int, int, int]]:
    """{source: (runs, inside the band built from every run, inside the band built without the
    run's own source, runs whose band was flagged)} (costmodels/llm/combination_bands.py)."""
    out: dict[str, list[int]] = {}
    for r in residuals:
        band = held_out_band(r.mechanisms, residuals)
        held = held_out_band(r.mechanisms, residuals, exclude_source=r.source)
        counts = out.setdefault(r.source, [0, 0, 0, 0])
        counts[0] += 1
        counts[1] += r.abs_error_pct <= band.pct
        counts[2] += held is not None and r.abs_error_pct <= held.pct
        counts[3] += band.few_rows
    return {s: tuple(c) for s, c in out.items()}


def print_coverage(residuals: tuple[DevResidual, ...]) -> None:
    """Share of held-out errors inside their band (the band built from every run, and the band
    built without the run's own source: the honest one), per source and in all."""
    cover = coverage(residuals)
    print(f"\nband coverage of LOSO errors{'':<10}{'runs':>6}{'all':>8}{'held':>8}{'flagged':>8}")
    for source, (n, inside, held, flagged) in [*cover.items(), ("all", tuple(
            map(sum, zip(*cover.values(), strict=True))))]:  # fmt: skip
        print(f"{source:<38}{n:>6}{100 * inside / n:>7.1f}%{100 * held / n:>7.1f}%{flagged:>8}")
    print(f"(all: the band built from every source; held: built without the run's own source, "
          f"what a run from a new source gets; flagged: < {MIN_ROWS} runs share the combination "
          f"or a mechanism is unvalidated: band widened)")


def best_runs(corpus: tuple[CorpusRow, ...]) -> dict[str, str]:
    """{ceiling: the label of the run that sets it}."""
    out = {}
    for name in MFU_CEILINGS:
        rows = [r for r in corpus if ceiling_name(r) == name]
        if rows:
            best = max(rows, key=model_mfu)
            out[name] = f"{best.source}: {best.label}"
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=25)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="print every LM iteration")
    parser.add_argument("--no-ceiling", action="store_true",
                        help="fit and predict without the MFU ceilings (mechanism before/after)")
    parser.add_argument("--sources", default=",".join(SOURCES))
    args = parser.parse_args()
    started = time.time()
    sources = tuple(args.sources.split(","))
    corpus = load_corpus(sources)
    shipped = log_errors(corpus)
    predictions = [predict(r) for r in corpus]
    verdicts = [p.memory_verdict for p in predictions]
    print(f"{len(corpus)} rows; shipped constants predicted in {time.time() - started:.0f} s",
          flush=True)  # fmt: skip
    fit_rows = [r for r in corpus if r.source != "vtrain" or r.tags["fit_sample"] == "yes"]
    ceilings = not args.no_ceiling
    joint = fit_on(fit_rows, iterations=args.iterations, ceilings=ceilings)
    in_sample = log_errors(corpus, joint.constants)
    print(f"joint fit: {joint.evaluations} evaluations, {time.time() - started:.0f} s", flush=True)
    held: dict[int, float] = {}
    flat_gen: dict[int, float] = {}
    progress = (lambda i, m: print(f"    iteration {i}: weighted MAPE {m:.2f} %", flush=True)) \
        if args.verbose else None  # fmt: skip
    for source in sources:
        fitted = fit_on([r for r in fit_rows if r.source != source], iterations=args.iterations,
                        progress=progress, ceilings=ceilings)  # fmt: skip
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
    residuals = tuple(DevResidual(r.source,
                                  frozenset(mechanisms_of(r, predictions[i].host_bound_share)),
                                  100 * abs(math.expm1(held[i])))
                      for i, r in enumerate(corpus))  # fmt: skip
    print_coverage(residuals)
    if args.write:
        record = {"method": "benchmarks/llm_loso.py: |predicted/measured - 1| in percent of each "
                  "dev run with every fitted constant refitted without the run's source; "
                  "mechanisms as costmodels.llm.error_bands.mechanisms names them",
                  "rows": [{"source": d.source, "label": r.label,
                            "mechanisms": sorted(d.mechanisms), "abs_error_pct": d.abs_error_pct,
                            "measured_s": r.measured_s,
                            "loso_predicted_s": r.measured_s * math.exp(held[i]),
                            "in_sample_predicted_s": r.measured_s * math.exp(in_sample[i])}
                           for i, (d, r) in enumerate(zip(residuals, corpus,
                                                          strict=True))]}  # fmt: skip
        write_atomic(LOSO_BANDS, json_text(record, indent=1) + "\n")
        print(f"wrote {LOSO_BANDS.relative_to(ROOT)}")
        best = {"constants": measured_ceilings(corpus),
                "method": "mfu_ceiling_*: the best model-FLOPs utilisation measured on the dev "
                "runs of the validation corpus per GPU generation, precision class and "
                "framework family (costmodels.validation.loso.measured_ceilings)",
                "runs": best_runs(corpus)}  # fmt: skip
        write_atomic(CEILINGS_DATA, json_text(best, indent=2) + "\n")
        print(f"wrote {CEILINGS_DATA.relative_to(ROOT)}")
    print(f"\n{time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
