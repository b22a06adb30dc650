"""The model ports (structured chat, embeddings) and their adapters: OpenAI-compatible endpoints, the local
MiniLM embedder, and no model at all."""

from altm.models._base import ChatModel, EmbeddingModel, NoChat, Structured, prompt_hash
from altm.models._cache import LLMCache, MemoryLLMCache
from altm.models._e5 import LocalE5Small, shared_local_e5
from altm.models._local import EmbedderError, LocalMiniLM, shared_local_minilm
from altm.models._openai import OpenAIChat, OpenAIEmbeddings
from altm.models._settings import LLMSettings, ModelTask, all_task_settings, task_settings, unconfigured

__all__ = [
    "ChatModel",
    "EmbedderError",
    "EmbeddingModel",
    "LLMCache",
    "LLMSettings",
    "LocalE5Small",
    "LocalMiniLM",
    "MemoryLLMCache",
    "ModelTask",
    "NoChat",
    "OpenAIChat",
    "OpenAIEmbeddings",
    "Structured",
    "all_task_settings",
    "prompt_hash",
    "shared_local_e5",
    "shared_local_minilm",
    "task_settings",
    "unconfigured",
]
