"""Model metrics (Prometheus, the process's default registry): chat calls per task by outcome, their tokens,
latency and cost, and embedder throughput. Labels are bounded: tasks, outcomes, directions, backends."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

MODEL_CALLS = Counter(
    "altm_model_calls", "Structured chat model calls per task, by outcome: ok, cached (answered by the LLM cache), "
    "failed (the endpoint errored), invalid (the answer did not validate), over_budget (the token budget is spent), "
    "cancelled (the caller gave up: prepare_turn's compression deadline)",
    ["task", "outcome"])
MODEL_TOKENS = Counter(
    "altm_model_tokens", "Tokens the endpoints reported, by task (the chat tasks and EMBEDDING) and direction "
    "(prompt, completion)", ["task", "direction"])
MODEL_COST = Counter(
    "altm_model_cost_usd", "Spend on model calls, from ALTM_<TASK>_LLM_USD_PER_1K_*_TOKENS, which inherit "
    "ALTM_LLM_USD_PER_1K_*_TOKENS like every task setting (0 unless prices are configured)", ["task"])
MODEL_CALL_SECONDS = Histogram("altm_model_call_seconds", "Time of one chat model call that reached the endpoint",
                               ["task"], buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0))
EMBEDDER_TEXTS = Counter("altm_embedder_texts", "Texts embedded, by backend (local, openai)", ["backend"])
EMBEDDER_SECONDS = Histogram(
    "altm_embedder_batch_seconds", "Time to embed one call's texts, by backend", ["backend"],
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0))


def observe_embedding(backend: str, texts: int, seconds: float) -> None:
    if texts:
        EMBEDDER_TEXTS.labels(backend=backend).inc(texts)
        EMBEDDER_SECONDS.labels(backend=backend).observe(seconds)
