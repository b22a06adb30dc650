"""Model clients (OpenAI-compatible chat and embeddings) and the local MiniLM embedder."""

from altm.models._cache import LLMCache, MemoryLLMCache
from altm.models._clients import ModelClients, Structured, prompt_hash
from altm.models._embedder import Embedder, EmbedderError, LocalEmbedder
from altm.models._settings import LLMSettings, Stage, stage_settings

__all__ = [
    "Embedder",
    "EmbedderError",
    "LLMCache",
    "LLMSettings",
    "LocalEmbedder",
    "MemoryLLMCache",
    "ModelClients",
    "Stage",
    "Structured",
    "prompt_hash",
    "stage_settings",
]
