"""BERT-Base and BERT-Large with the pre-training heads, named as Hugging Face's
``BertForPreTraining`` names them.

Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers for Language
Understanding", NAACL 2019, section 3: BERT-Base L=12, H=768, A=12 (110M parameters) and
BERT-Large L=24, H=1024, A=16 (340M), feed-forward size 4H, a 30,000-token WordPiece vocabulary
(the released uncased vocabulary has 30,522 entries), 512 positions and two segment types. The
masked-LM output matrix is tied to the word embeddings (counted once); its bias, transform layer
and the next-sentence head are counted, which is what makes the totals 110,106,428 and
336,226,108 measured in costmodels/data/h200_profile.json.
"""

from __future__ import annotations

from costmodels.workloads.base import Tensor

VOCAB = 30_522
POSITIONS = 512
SEGMENTS = 2


def _linear(prefix: str, n_in: int, n_out: int) -> list[Tensor]:
    return [Tensor(f"{prefix}.weight", n_out * n_in), Tensor(f"{prefix}.bias", n_out)]


def _layer_norm(prefix: str, width: int) -> list[Tensor]:
    return [Tensor(f"{prefix}.weight", width), Tensor(f"{prefix}.bias", width)]


def bert_tensors(layers: int, hidden: int) -> tuple[Tensor, ...]:
    """BertForPreTraining: embeddings, ``layers`` encoder blocks, pooler, MLM and NSP heads."""
    e = "bert.embeddings"
    tensors = [
        Tensor(f"{e}.word_embeddings.weight", VOCAB * hidden),
        Tensor(f"{e}.position_embeddings.weight", POSITIONS * hidden),
        Tensor(f"{e}.token_type_embeddings.weight", SEGMENTS * hidden),
        *_layer_norm(f"{e}.LayerNorm", hidden),
    ]
    for i in range(layers):
        p = f"bert.encoder.layer.{i}"
        for proj in ("query", "key", "value"):
            tensors += _linear(f"{p}.attention.self.{proj}", hidden, hidden)
        tensors += _linear(f"{p}.attention.output.dense", hidden, hidden)
        tensors += _layer_norm(f"{p}.attention.output.LayerNorm", hidden)
        tensors += _linear(f"{p}.intermediate.dense", hidden, 4 * hidden)
        tensors += _linear(f"{p}.output.dense", 4 * hidden, hidden)
        tensors += _layer_norm(f"{p}.output.LayerNorm", hidden)
    tensors += _linear("bert.pooler.dense", hidden, hidden)
    tensors.append(Tensor("cls.predictions.bias", VOCAB))  # decoder weight is tied, bias is not
    tensors += _linear("cls.predictions.transform.dense", hidden, hidden)
    tensors += _layer_norm("cls.predictions.transform.LayerNorm", hidden)
    tensors += _linear("cls.seq_relationship", hidden, 2)
    return tuple(tensors)
