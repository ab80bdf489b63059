"""The named workloads: architecture, published total and measured profile of each.

Totals are computed from the architecture definitions in this package; tests hold them against
the H200 measurement (costmodels/data/h200_profile.json) where it has the model and against the
published totals quoted in ``published`` otherwise.
"""

from __future__ import annotations

from functools import cache

from costmodels.workloads import profile
from costmodels.workloads.base import Tensor, Workload
from costmodels.workloads.bert import bert_tensors
from costmodels.workloads.gpt import GPT_CONFIGS, gpt_tensors
from costmodels.workloads.llama import LLAMA_CONFIGS, llama_tensors
from costmodels.workloads.vision import resnet50_tensors, vgg16_tensors

_H200 = "measured: costmodels/data/h200_profile.json (NVIDIA H200, torch 2.11)"

# display name -> (profile key or None, aliases, architecture source, published total)
_SPECS: dict[str, tuple[str | None, tuple[str, ...], str, str]] = {
    "ResNet-50": ("resnet50", ("resnet50", "resnet-50", "resnet"),
                  "He et al., CVPR 2016, Table 1; torchvision resnet50 layout",
                  f"25,557,032 ({_H200})"),
    "VGG-16": ("vgg16", ("vgg16", "vgg-16", "vgg"),
               "Simonyan and Zisserman, ICLR 2015, Table 1 configuration D",
               f"138,357,544 ({_H200})"),
    "BERT-Base": ("bert-base", ("bert-base", "bert_base", "bertbase", "bert"),
                  "Devlin et al., NAACL 2019, section 3 (L=12, H=768)",
                  f"110,106,428 with pre-training heads ({_H200}); 110M in the paper"),
    "BERT-Large": ("bert-large", ("bert-large", "bert_large", "bertlarge"),
                   "Devlin et al., NAACL 2019, section 3 (L=24, H=1024)",
                   f"336,226,108 with pre-training heads ({_H200}); 340M in the paper"),
    "GPT-2 Small": (None, ("gpt2", "gpt-2", "gpt2-small", "gpt-2-small"),
                    "Radford et al., OpenAI 2019, Table 2 (12 layers, d 768)",
                    "124M: OpenAI's released checkpoint name (models/124M)"),
    "GPT-2 Medium": ("gpt2-medium", ("gpt2-medium", "gpt-2-medium"),
                     "Radford et al., OpenAI 2019, Table 2 (24 layers, d 1024)",
                     f"354,823,168 ({_H200})"),
    "GPT-2 Large": (None, ("gpt2-large", "gpt-2-large"),
                    "Radford et al., OpenAI 2019, Table 2 (36 layers, d 1280)",
                    "774M: OpenAI's released checkpoint name (models/774M)"),
    "GPT-2 XL": (None, ("gpt2-xl", "gpt-2-xl", "gpt2xl"),
                 "Radford et al., OpenAI 2019, Table 2 (48 layers, d 1600)",
                 "1558M: OpenAI's released checkpoint name (models/1558M)"),
    "GPT-3 175B": (None, ("gpt3", "gpt-3", "gpt3-175b", "gpt-3-175b"),
                   "Brown et al., NeurIPS 2020, Table 2.1 (96 layers, d 12288)",
                   "175.0B: Brown et al., Table 2.1 (our count 174.6B, see tests)"),
    "Llama 2 7B": (None, ("llama2-7b", "llama-2-7b", "llama2_7b"),
                   "Touvron et al., arXiv 2307.09288, 2023", "7B: nominal size, Llama 2 paper"),
    "Llama 2 13B": (None, ("llama2-13b", "llama-2-13b", "llama2_13b"),
                    "Touvron et al., arXiv 2307.09288, 2023", "13B: nominal size, Llama 2 paper"),
    "Llama 2 70B": (None, ("llama2-70b", "llama-2-70b", "llama2_70b"),
                    "Touvron et al., arXiv 2307.09288, 2023", "70B: nominal size, Llama 2 paper"),
    "Llama 3 8B": (None, ("llama3-8b", "llama-3-8b", "llama3_8b"),
                   "Llama Team, arXiv 2407.21783, 2024, Table 3", "8B: nominal size, Table 3"),
    "Llama 3 70B": (None, ("llama3-70b", "llama-3-70b", "llama3_70b"),
                    "Llama Team, arXiv 2407.21783, 2024, Table 3", "70B: nominal size, Table 3"),
    "Llama 3 405B": (None, ("llama3-405b", "llama-3-405b", "llama3_405b"),
                     "Llama Team, arXiv 2407.21783, 2024, Table 3", "405B: nominal size, Table 3"),
}  # fmt: skip


def _tensors(name: str) -> tuple[Tensor, ...]:
    if name == "ResNet-50":
        return resnet50_tensors()
    if name == "VGG-16":
        return vgg16_tensors()
    if name == "BERT-Base":
        return bert_tensors(layers=12, hidden=768)
    if name == "BERT-Large":
        return bert_tensors(layers=24, hidden=1024)
    if name in GPT_CONFIGS:
        return gpt_tensors(*GPT_CONFIGS[name])
    return llama_tensors(*LLAMA_CONFIGS[name])


@cache
def _build(name: str) -> Workload:
    key, aliases, source, published = _SPECS[name]
    return Workload(
        name=name,
        tensors=_tensors(name),
        source=source,
        measured=profile.measured(key, "fp32") if key else None,
        measured_bf16=profile.measured(key, "bf16") if key else None,
        published=published,
        aliases=aliases,
    )


def _normalise(text: str) -> str:
    return text.strip().lower().replace(" ", "-").replace("_", "-")


_LOOKUP: dict[str, str] = {
    _normalise(label): name
    for name, (_, aliases, _, _) in _SPECS.items()
    for label in (name, *aliases)
}


def workload_names() -> list[str]:
    """Display names of every workload, in catalog order."""
    return list(_SPECS)


def get_workload(name: str) -> Workload:
    """A workload by display name or alias, case-insensitively ("resnet50", "Llama 2 7B")."""
    key = _LOOKUP.get(_normalise(name))
    if key is None:
        import difflib

        close = difflib.get_close_matches(_normalise(name), list(_LOOKUP), n=3, cutoff=0.6)
        guesses = list(dict.fromkeys(_LOOKUP[c] for c in close))
        hint = f"did you mean {', '.join(guesses)}? " if guesses else ""
        raise ValueError(f"unknown workload {name!r}; {hint}choices: {', '.join(_SPECS)}")
    return _build(key)
