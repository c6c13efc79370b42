"""Traffic that bypassed the proxy: the engine's own token counters against what it saw.

vLLM, SGLang, TGI and llama.cpp's server publish cumulative token counts on
their Prometheus endpoint. Between two scrapes, the engine's increase minus
the tokens of requests the proxy settled is work nobody attributed; its share
is reported (``/metrics``, the log) instead of loading it onto proxied requests.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("greenml")

# engine → (prompt token counter, generated token counter), sample names as exposed
COUNTERS: dict[str, tuple[str, str]] = {
    "vllm": ("vllm:prompt_tokens_total", "vllm:generation_tokens_total"),
    "sglang": ("sglang:prompt_tokens_total", "sglang:generation_tokens_total"),
    "tgi": ("tgi_request_input_length_sum", "tgi_request_generated_tokens_sum"),
    "llama.cpp": ("llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total"),
}


@dataclass(frozen=True)
class EngineTokens:
    """Cumulative token counts an engine published, and which engine it looked like."""

    engine: str
    prompt_tokens: float
    generated_tokens: float


def parse_engine_tokens(text: str) -> EngineTokens | None:
    """The token counters of a Prometheus text page (summed over labels); None if none known."""
    from prometheus_client.parser import text_string_to_metric_families

    values: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                values[sample.name] = values.get(sample.name, 0.0) + float(sample.value)
    except (ValueError, TypeError) as exc:
        log.warning("greenml: engine metrics unreadable: %s", exc)
        return None
    for engine, (prompt, generated) in COUNTERS.items():
        if prompt in values or generated in values:
            return EngineTokens(engine, values.get(prompt, 0.0), values.get(generated, 0.0))
    return None


@dataclass
class Unattributed:
    """Engine tokens against proxied tokens since the first scrape."""

    first: EngineTokens | None = None
    last: EngineTokens | None = None
    proxy_prompt: float = 0.0
    proxy_generated: float = 0.0

    def seen_by_proxy(self, prompt: int | None, generated: int | None) -> None:
        if self.first is not None:
            self.proxy_prompt += prompt or 0
            self.proxy_generated += generated or 0

    def scraped(self, tokens: EngineTokens) -> None:
        if self.first is None:
            self.first = tokens
        self.last = tokens

    def shares(self) -> dict[str, float | None]:
        """Unattributed share of prompt and generated tokens (None before two scrapes)."""
        if self.first is None or self.last is None:
            return {"prompt": None, "generated": None}
        engine_p = self.last.prompt_tokens - self.first.prompt_tokens
        engine_g = self.last.generated_tokens - self.first.generated_tokens
        return {
            "prompt": _share(engine_p, self.proxy_prompt),
            "generated": _share(engine_g, self.proxy_generated),
        }


def _share(engine: float, proxy: float) -> float | None:
    if engine <= 0:
        return None
    return min(1.0, max(0.0, (engine - proxy) / engine))


async def scrape_engine(client: Any, url: str, every_s: float, into: Unattributed) -> None:
    """Read the engine's token counters every ``every_s`` into ``into``, until cancelled."""
    while True:
        try:
            page = await client.get(url)
            tokens = parse_engine_tokens(page.text)
            if tokens is not None:
                into.scraped(tokens)
        except Exception as exc:  # an engine without metrics: said, never fatal
            log.warning("greenml: engine metrics at %s: %s", url, exc)
        await asyncio.sleep(every_s)
