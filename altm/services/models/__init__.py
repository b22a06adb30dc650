"""Model clients (OpenAI-compatible chat and embeddings) and the local MiniLM embedder."""

from ._cache import LLMCache, MemoryLLMCache, ShardLLMCache
from ._clients import ModelClients, Structured, prompt_hash
from ._embedder import Embedder, EmbedderError, LocalEmbedder
from ._settings import LLMSettings, Stage, stage_settings

__all__ = [
    "Embedder",
    "EmbedderError",
    "LLMCache",
    "LLMSettings",
    "LocalEmbedder",
    "MemoryLLMCache",
    "ModelClients",
    "ShardLLMCache",
    "Stage",
    "Structured",
    "prompt_hash",
    "stage_settings",
]
