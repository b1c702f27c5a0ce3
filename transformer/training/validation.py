"""Validation and selection: the score every checkpoint and every export candidate is judged by.

Translation runs score greedy BLEU/chrF on each corpus's val split (`val_bleu_<corpus>` when
there are several; `val_bleu`, their mean, is the selection score); toy tasks score sequence
accuracy. Validation loss and perplexity are reported over all validation pairs together.
"""
from __future__ import annotations

import torch

from transformer.model import Transformer
from transformer.tokenizer import TextTokenizer

from .data import PairDataset
from .evaluate import (
    score_translations,
    sequence_accuracy,
    teacher_forced_loss,
    translate_ids,
)
from .hardware import training_attention


class Validator:
    def __init__(self, tokenizer: TextTokenizer, val_sets: dict[str, PairDataset], val_refs: dict[str, list[str]],
                 device: torch.device, max_tokens: int, batch_size: int, autocast: bool):
        self.tokenizer, self.val_sets, self.val_refs = tokenizer, val_sets, val_refs
        self.device, self.max_tokens, self.batch_size, self.autocast = device, max_tokens, batch_size, autocast

    def __call__(self, model: Transformer) -> dict:
        """Every metric of `model` on the validation sets; "score" is the one selection uses."""
        model.eval()
        with training_attention(self.device):
            metrics = self._loss(model)
            metrics.update(self._bleu(model) if self.val_refs else self._accuracy(model))
        model.train()
        return metrics

    def _loss(self, model: Transformer) -> dict:
        t = self.tokenizer
        every = PairDataset([p for v in self.val_sets.values() for p in v.pairs])
        batches = (b.to(self.device) for b in every.batches(self.max_tokens, t.pad_id, t.bos_id, t.eos_id))
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            val_loss, val_ppl = teacher_forced_loss(model, batches)
        return {"val_loss": round(val_loss, 4), "val_ppl": round(val_ppl, 3)}

    def _bleu(self, model: Transformer) -> dict:
        metrics, bleus, chrfs = {}, [], []
        for name, val in self.val_sets.items():
            sources = [s for s, _ in val.pairs]
            outputs = translate_ids(model, sources, method="greedy", batch_size=self.batch_size)
            scores = score_translations(self.tokenizer.decode_batch(outputs), self.val_refs[name])
            bleus.append(scores["bleu"])
            chrfs.append(scores["chrf"])
            if len(self.val_sets) > 1:
                metrics.update({f"val_bleu_{name}": scores["bleu"], f"val_chrf_{name}": scores["chrf"]})
        metrics.update(val_bleu=round(sum(bleus) / len(bleus), 2), val_chrf=round(sum(chrfs) / len(chrfs), 2))
        metrics["score"] = metrics["val_bleu"]
        return metrics

    def _accuracy(self, model: Transformer) -> dict:
        (val,) = self.val_sets.values()
        acc = sequence_accuracy(model, val.pairs, batch_size=self.batch_size)
        return {"val_seq_acc": round(acc["sequence_accuracy"], 4), "val_tok_acc": round(acc["token_accuracy"], 4),
                "score": 100 * acc["sequence_accuracy"]}
