"""A Megatron-LM / Megatron-Bridge training command line, pasted as text or as the launch script
that builds it (examples/*/train_*.sh), as predict-llm flags.

The text is split into words by ``shlex`` (the shell's own quoting and comments); ``NAME=value``
assignments with literal values, and ``${NAME:-default}``, fill ``$NAME`` in the words; then
every ``--flag value`` is looked up below. A script's flags are read wherever they stand (both
branches of an ``if`` alike). Meanings from Megatron-LM's megatron/training/arguments.py:
the data-parallel degree is what world size / (TP x PP x CP) leaves, the distributed optimizer
shards optimizer states (ZeRO 1), attention is tied to the output head unless
--untie-embeddings-and-output-weights, and --fp8-recipe defaults to delayed scaling.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from commatlas.job_files.report import JobFile, flag_of

#: Megatron flag -> (dest, type): int/str take a value, a constant is the value of a bare flag
_READ: dict[str, tuple[str, Any]] = {
    "--tensor-model-parallel-size": ("tp", int), "--pipeline-model-parallel-size": ("pp", int),
    "--context-parallel-size": ("cp", int), "--expert-model-parallel-size": ("ep", int),
    "--virtual-pipeline-model-parallel-size": ("interleave", int),
    "--sequence-parallel": ("sequence_parallel", True),
    "--use-distributed-optimizer": ("zero", 1), "--micro-batch-size": ("micro_batch", int),
    "--global-batch-size": ("global_batch", int), "--num-layers": ("layers", int),
    "--hidden-size": ("hidden", int), "--num-attention-heads": ("heads", int),
    "--ffn-hidden-size": ("ffn", int), "--seq-length": ("seq_len", int),
    "--vocab-size": ("vocab", int), "--swiglu": ("gated_mlp", True),
    "--untie-embeddings-and-output-weights": ("tied_embeddings", False),
    "--num-experts": ("experts", int), "--moe-router-topk": ("top_k", int),
    "--bf16": ("precision", "bf16"), "--fp16": ("precision", "fp16"),
    "--fp8-format": ("precision", str), "--fp8-recipe": ("fp8_recipe", str),
    "--fp8-param-gather": ("fp8_all_gather", True),
    "--grad-reduce-in-bf16": ("reduce_dtype", "bf16"),
    "--tp-comm-overlap": ("async_tp", True), "--recompute-granularity": ("recompute", str),
    "--use-legacy-models": ("framework", "megatron-legacy"),
    "--nproc_per_node": ("gpus_per_node", int), "--nproc-per-node": ("gpus_per_node", int),
    "--nnodes": ("nodes", int), "--num-query-groups": ("kv_heads", int),
    "--moe-ffn-hidden-size": ("moe_ffn", int),
    "--num-layers-per-virtual-pipeline-stage": ("layers_per_virtual_stage", int),
    # issue 39's layout vocabulary, as Megatron-LM's arguments.py spells it
    "--decoder-first-pipeline-num-layers": ("first_stage_layers", int),
    "--decoder-last-pipeline-num-layers": ("last_stage_layers", int),
    "--expert-tensor-parallel-size": ("etp", int), "--enable-cuda-graph": ("cuda_graphs", True),
    "--moe-token-dispatcher-type": ("dispatcher_type", str),
    "--moe-flex-dispatcher-backend": ("dispatcher_backend", str),
    "--moe-enable-deepep": ("dispatcher_backend", "deepep"),
    "--mtp-num-layers": ("mtp", int),  # multi-token prediction, priced as --mtp (issue 39)
    # Megatron-FSDP (issue 39; costmodels/llm/framework_dp.py)
    "--use-megatron-fsdp": ("framework", "megatron-fsdp"),
    "--data-parallel-sharding-strategy": ("sharding", str),
    "--fsdp-double-buffer": ("fsdp_double_buffer", True), "--use-nccl-ub": ("nccl_ub", True),
    "--suggested-communication-unit-size": ("fsdp_unit_size", int),
    "--megatron-fsdp-grad-comm-dtype": ("reduce_dtype", str),
}  # fmt: skip
#: --data-parallel-sharding-strategy -> ZeRO stage (Megatron-FSDP's default: optim_grads_params)
_SHARDING = {"no_shard": 0, "optim": 1, "optim_grads": 2, "optim_grads_params": 3}
#: flags read and not priced, with why
_NOT_PRICED = {
    "--recompute-method": "full recompute priced for every layer",
    "--recompute-num-layers": "full recompute priced for every layer",
    "--overlap-grad-reduce": "gradient reduction is priced overlapped with backward",
    "--overlap-param-gather": "parameter gathers are priced overlapped",
    "--group-query-attention": "read through --num-query-groups",
}  # fmt: skip
_CONTEXT = ("nodes", "moe_ffn", "layers_per_virtual_stage", "nccl_ub")  # values that are not flags
#: Megatron's --moe-token-dispatcher-type / flex backend -> --moe-dispatcher (allgather: priced
#: as the all-to-all; flex runs DeepEP unless its backend says HybridEP, Megatron-Core v0.12/v0.15)
_DISPATCHERS = {"alltoall": "alltoall", "allgather": "alltoall", "flex": "deepep"}
_BACKENDS = ("deepep", "hybridep")
_OLD = {"--model-parallel-size": "--tensor-model-parallel-size",
        "--checkpoint-activations": "--recompute-granularity full"}  # fmt: skip
_LAYOUT_WORDS = re.compile(r"parallel|pipeline|recompute|fp8|expert|moe|zero|offload|shard")
_VAR = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)")
_ASSIGN = re.compile(r"^([A-Za-z_]\w*)=(.*)$")


def _words(text: str, job: JobFile) -> list[str]:
    """The script's words with literal shell variables filled in."""
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError as exc:  # an unclosed quote
        raise job.fail("", f"not a shell command line ({exc})") from None
    env: dict[str, str] = {}

    def fill(word: str) -> str:
        def one(match: re.Match) -> str:
            name = match.group(1) or match.group(3)
            return env.get(name, match.group(2) if match.group(2) is not None else match.group(0))

        return _VAR.sub(one, word)

    out = []
    for word in words:
        word = fill(word)
        assign = _ASSIGN.match(word)
        if assign and "$" not in assign.group(2):
            env[assign.group(1)] = assign.group(2)
        elif " " in word and word.startswith("--"):  # a quoted "--flag value" array item
            out.extend(shlex.split(word))
        else:
            out.append(word)
    return out


def read_megatron(text: str, path: str) -> JobFile:
    """The flags a Megatron command line or launch script describes."""
    job = JobFile(path, "megatron", finish=_finish)
    words = _words(text, job)
    job.set("(Megatron-Core)", "framework", "megatron")
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        flag, _, inline = word.partition("=")
        value = inline or (words[i + 1] if i + 1 < len(words) else "")
        if flag in _OLD:
            raise job.fail(flag, f"is an old Megatron-LM flag this reader does not read; the "
                           f"current one is {_OLD[flag]}")
        if flag in _READ:
            _take(job, flag, value, *_READ[flag])
        elif flag in _NOT_PRICED:
            job.ignore(flag, _NOT_PRICED[flag])
        elif _LAYOUT_WORDS.search(flag) and not flag.startswith(("--fp8-amax", "--moe-aux",
                                                                   "--moe-router-load")):
            job.unknown(flag)
        else:
            job.ignore(flag, "not a layout, shape or precision flag: does not change the step")
    return job


def _take(job: JobFile, flag: str, value: str, dest: str, kind: Any) -> None:
    if kind is int:
        if not (value.isascii() and value.isdigit()) or int(value) < 1:  # ASCII digits only
            why = ("an unset shell variable" if value.startswith("$") else
                   "not a positive integer in ASCII digits")  # fmt: skip
            job.ignore(flag, f"{value!r}: {why}")
        elif dest in _CONTEXT:  # read here, turned into flags in _finish
            job.context[dest] = int(value)
            job.context[f"{dest}_key"] = flag
        else:
            job.set(flag, dest, int(value))
    elif kind is str:
        _text(job, flag, dest, value)
    elif dest == "dispatcher_backend":  # --moe-enable-deepep (Megatron-Core v0.12)
        job.context["backend"] = (flag, kind)
    elif dest in _CONTEXT:
        job.context[dest] = flag
    else:
        job.set(flag, dest, kind)


def _text(job: JobFile, flag: str, dest: str, value: str) -> None:
    if flag == "--fp8-format":
        if value not in ("hybrid", "e4m3"):
            raise job.fail(flag, f"{value!r} is not hybrid or e4m3")
        job.set(flag, "precision", "fp8")
        job.context["fp8"] = True
        job.assume("fp8_recipe", "delayed", "Megatron's default --fp8-recipe")
    elif flag == "--fp8-recipe":
        if value not in ("delayed", "tensorwise", "blockwise"):
            job.ignore(flag, f"{value!r} is not priced (delayed, tensorwise, blockwise are)")
            return
        job.set(flag, dest, value)
    elif dest == "dispatcher_type":
        if value not in _DISPATCHERS:
            raise job.fail(flag, f"{value!r} is not {', '.join(_DISPATCHERS)}")
        job.context["dispatcher"] = (flag, value)
    elif dest == "dispatcher_backend":
        if value not in _BACKENDS:
            raise job.fail(flag, f"{value!r} is not {' or '.join(_BACKENDS)}")
        job.context["backend"] = (flag, value)
    elif dest == "sharding":
        if value not in _SHARDING:
            raise job.fail(flag, f"{value!r} is not {', '.join(_SHARDING)}")
        job.context["sharding"] = (flag, value)
    elif dest == "reduce_dtype":  # --megatron-fsdp-grad-comm-dtype
        if value in ("fp32", "bf16"):
            job.set(flag, dest, value)
        else:
            job.ignore(flag, f"{value!r}: the main-gradient dtype is reduced (fp32 or bf16 as "
                       "--reduce-dtype)")  # fmt: skip
    elif flag == "--recompute-granularity":
        if value not in ("full", "selective"):
            raise job.fail(flag, f"{value!r} is not full or selective")
        job.set(flag, dest, value)


def _finish(job: JobFile, values: dict[str, Any]) -> None:
    """The fp8 format beats --bf16; dp = world / (TP x PP x CP); interleave from layers per
    virtual stage; an MoE FFN width; untied only when said."""
    if job.context.get("fp8"):  # --bf16 beside --fp8-format is the precision of the rest
        job.set("--fp8-format", "precision", "fp8")
    _dispatcher(job)
    _megatron_fsdp(job)
    if "moe_ffn" in job.context and job.values.get("experts", 1) > 1:
        job.set("--moe-ffn-hidden-size", "ffn", job.context["moe_ffn"])
    job.assume("tied_embeddings", True, "Megatron ties the output head unless "
               "--untie-embeddings-and-output-weights")
    tp, pp, cp = (values.get(d) or job.values.get(d) or 1 for d in ("tp", "pp", "cp"))
    job.assume("tp", tp, "Megatron's default 1")
    job.assume("pp", pp, "Megatron's default 1")
    per_stage = job.context.get("layers_per_virtual_stage")
    layers = values.get("layers") or job.values.get("layers")
    if per_stage and layers and pp > 1:
        if layers % (pp * per_stage):
            raise job.fail("--num-layers-per-virtual-pipeline-stage", f"{per_stage} x PP {pp} "
                           f"does not divide --num-layers {layers}")
        job.set("--num-layers-per-virtual-pipeline-stage", "interleave",
                layers // (pp * per_stage))  # fmt: skip
    nodes, per_node = job.context.get("nodes"), job.values.get("gpus_per_node")
    if values.get("dp") is None and nodes and per_node:
        world = nodes * per_node
        if world % (tp * pp * cp):
            raise job.fail("--nnodes x --nproc_per_node", f"{world} GPUs are not a multiple of "
                           f"TP {tp} x PP {pp} x CP {cp} = {tp * pp * cp}; give --dp")
        job.set("--nnodes x --nproc_per_node / (TP x PP x CP)", "dp", world // (tp * pp * cp))
        job.context.update(world=world, world_key="--nnodes x --nproc_per_node")
    elif values.get("dp") is None:
        raise job.fail("", "the command does not say how many GPUs run it (torchrun --nnodes "
                       "and --nproc_per_node); give --dp")


def _megatron_fsdp(job: JobFile) -> None:
    """ZeRO stage from the sharding strategy (the distributed optimizer Megatron-FSDP v1 turns
    on says nothing then); --use-nccl-ub turns the double buffer on (arguments.py). Without
    --use-megatron-fsdp its flags change nothing."""
    fsdp_flags = ("fsdp_double_buffer", "fsdp_unit_size", "reduce_dtype")
    if job.values.get("framework") != "megatron-fsdp":
        for dest in fsdp_flags[:2]:
            if dest in job.values:
                job.values.pop(dest)
                job.read = [r for r in job.read if r["flag"] != flag_of(dest)]
                job.ignore(job.keys[dest], "a Megatron-FSDP flag without --use-megatron-fsdp")
        if "sharding" in job.context:
            job.ignore(job.context["sharding"][0], "without --use-megatron-fsdp")
        return
    flag, strategy = job.context.get("sharding", ("--use-megatron-fsdp (default "
                                                  "optim_grads_params)", "optim_grads_params"))
    job.set(flag, "zero", _SHARDING[strategy])
    if _SHARDING[strategy] != 3:  # the unit and double buffer shape the parameter gathers only
        for dest in fsdp_flags[:2]:
            if dest in job.values:
                job.values.pop(dest)
                job.read = [r for r in job.read if r["flag"] != flag_of(dest)]
                job.ignore(job.keys[dest], f"gathers parameters only under optim_grads_params "
                           f"({strategy} here)")  # fmt: skip
        return
    if "nccl_ub" in job.context:
        job.set("--use-nccl-ub", "fsdp_double_buffer", True)


def _dispatcher(job: JobFile) -> None:
    """--moe-dispatcher from the dispatcher type and the flex backend read (``_DISPATCHERS``)."""
    if "dispatcher" not in job.context:
        if "backend" in job.context:
            job.ignore(job.context["backend"][0], "a flex backend without "
                       "--moe-token-dispatcher-type flex does not choose the dispatcher")
        return
    flag, kind = job.context["dispatcher"]
    name = _DISPATCHERS[kind]
    if kind == "flex" and "backend" in job.context:
        flag, name = f"{flag} flex {job.context['backend'][0]}", job.context["backend"][1]
    elif kind == "allgather":
        job.assume("moe_dispatcher", "alltoall", "the all-gather dispatcher is priced as the "
                   "all-to-all (it sends every token to every expert rank: optimistic)")
        return
    job.set(flag, "moe_dispatcher", name)
