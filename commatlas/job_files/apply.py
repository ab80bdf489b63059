"""``--from FILE`` on predict-llm / plan-llm (issue 41): the file's values fill every flag the
user did not give (given flags win), then the rules between them are checked with the file's
keys named. ``add_from_flag`` is called once per parser; ``apply_job_file`` once per run.

Which flags were given is recorded while argparse parses (each action of the parser records its
dest), so ``--zero 0`` given against a file's ZeRO 3 wins although 0 is the default.
"""

from __future__ import annotations

import argparse
import sys

from commatlas.cli_types import nonempty
from commatlas.job_files.report import JobFile, flag_of, report_lines

#: flags a job file may supply, so argparse must not demand them before the file is read
FILLABLE = ("tp", "pp", "dp", "global_batch", "gpus")
#: the layout flags plan-llm searches instead of taking from a file
LAYOUT_ONLY = ("tp", "pp", "dp", "cp", "ep", "micro_batch", "interleave", "zero",
               "sequence_parallel", "recompute", "recompute_every", "dp_shard")  # fmt: skip
_RECORDING: dict[type, type] = {}


def _recording(cls: type) -> type:
    """A subclass of an argparse action class that also records its dest as given."""
    if cls not in _RECORDING:

        def __call__(self, parser, namespace, values, option_string=None):  # noqa: ANN001, N807
            given = getattr(namespace, "given_flags", None)
            if given is None:
                given = set()
                namespace.given_flags = given
            given.add(self.dest)
            cls.__call__(self, parser, namespace, values, option_string)

        _RECORDING[cls] = type(f"Recording{cls.__name__}", (cls,), {"__call__": __call__})
    return _RECORDING[cls]


def add_from_flag(parser: argparse.ArgumentParser) -> None:
    """``--from FILE``, and the flags a file may supply made optional (checked after reading)."""
    parser.add_argument("--from", dest="from_file", type=nonempty(), metavar="FILE",
                        help="your job's own config: a torchtitan .toml, a DeepSpeed .json, an "
                        "Accelerate FSDP or Megatron-Bridge override .yaml or a Megatron-LM "
                        "command line / script (.sh, .txt); for predict-serving a vLLM / SGLang "
                        "/ trtllm-serve command or TensorRT-LLM options .yaml; flags given "
                        "beside it win")  # fmt: skip
    fillable = []
    for action in parser._actions:
        if action.dest != "help":
            action.__class__ = _recording(type(action))
        if action.dest in FILLABLE and action.required:
            action.required = False
            fillable.append((action.dest, action.option_strings[0]))
    parser.set_defaults(from_required=tuple(fillable), job_file_report=None)


def apply_job_file(args: argparse.Namespace, command: str) -> None:
    """Fill ``args`` from ``--from`` (if given) and check that the formerly required flags are
    set; ValueError (one line naming the file and key, or the flag) otherwise."""
    from commatlas.job_files.readers import SERVING_FORMATS, read_job_file

    given: set[str] = getattr(args, "given_flags", set())
    if args.from_file is not None:
        job = read_job_file(args.from_file)
        serving = command == "predict-serving"
        if (job.format in SERVING_FORMATS) != serving:
            wanted = "a vLLM / SGLang serve command" if serving else "a training config"
            raise job.fail("", f"is a {job.format} file; {command} reads {wanted}")
        if job.finish is not None:
            view = {**job.values, **{d: getattr(args, d) for d in given if hasattr(args, d)}}
            if command == "plan-llm" and "dp" not in view and getattr(args, "gpus", None):
                model_parallel = 1
                for dest in ("tp", "pp", "cp"):
                    model_parallel *= view.get(dest) or 1
                view["dp"] = max(args.gpus // model_parallel, 1)
            job.finish(job, view)
        if command == "plan-llm":
            _for_planning(job)
        overridden = []
        for dest, value in job.values.items():
            if not hasattr(args, dest):
                continue
            if dest in given or (dest in ("model", "hf_config") and given & {"model", "hf_config"}):
                overridden.append(flag_of(dest))
            else:
                setattr(args, dest, value)
        _check(job, args, given)
        args.job_file_report = job.as_json(overridden)
        for line in job.warnings:
            print(f"commatlas {command}: warning: {line}", file=sys.stderr)
    for dest, flag in args.from_required:
        if getattr(args, dest) is None:
            where = f" (--from {args.from_file} does not set it)" if args.from_file else ""
            raise ValueError(f"{flag} is required{where}")


def _for_planning(job: JobFile) -> None:
    """plan-llm searches the layout: the file's degrees give the GPU count, the rest is listed."""
    degrees = [job.values.get(d) for d in ("tp", "pp", "dp", "cp")]
    if all(isinstance(d, int) for d in degrees):
        tp, pp, dp, cp = degrees
        job.set("tp x pp x dp x cp", "gpus", tp * pp * dp * cp)
    for dest in LAYOUT_ONLY:
        if dest in job.values:
            key = job.keys.get(dest) or "(assumed)"
            job.ignore(key, f"{flag_of(dest)} {job.values.pop(dest)}: plan-llm searches the "
                       "layout (predict-llm --from prices this one)")
    job.read = [row for row in job.read if row["flag"] not in map(flag_of, LAYOUT_ONLY)]


def _check(job: JobFile, args: argparse.Namespace, given: set[str]) -> None:
    """The rules between the file's values, named by the file's keys: the batch splits into
    micro-batches over the data-parallel ranks."""
    gbs, micro, dp = (getattr(args, d, None) for d in ("global_batch", "micro_batch", "dp"))
    if isinstance(micro, int) and isinstance(dp, int) and gbs is not None and gbs % (micro * dp):
        names = [job.keys.get(d) or flag_of(d) for d in ("global_batch", "micro_batch", "dp")
                 if d not in given] or ["--global-batch"]  # fmt: skip
        raise job.fail(names[0], f"global batch {gbs} is not a multiple of micro-batch {micro} "
                       f"x data-parallel {dp} (from {', '.join(names)})")
    world, layout = job.context.get("world"), ("tp", "pp", "dp", "cp")
    if world and all(isinstance(getattr(args, d, None), int) for d in layout):
        gpus = args.tp * args.pp * args.dp * args.cp
        if gpus != world:
            raise job.fail(job.context["world_key"], f"{world} GPUs, but TP {args.tp} x PP "
                           f"{args.pp} x DP {args.dp} x CP {args.cp} = {gpus}")
    if not any(getattr(args, d, None) for d in ("model", "hf_config", "layers")):
        raise job.fail("", f"names no model this tool knows ({job.format} files often do not); "
                       "give --model or --hf-config (a config.json)")


def job_file_lines(args: argparse.Namespace) -> list[str]:
    """The text report of what ``--from`` read (empty without ``--from``)."""
    report = getattr(args, "job_file_report", None)
    return report_lines(report) if report else []
