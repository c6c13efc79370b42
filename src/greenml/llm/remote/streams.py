"""Tallies of a streamed response: tokens, model and ``usage.energy`` seen chunk by chunk.

OpenAI chat-completion chunks carry ``usage`` in the last chunk when the caller
asked for it (``stream_options={"include_usage": True}``); without it the
content chunks are counted, and the figure says so. Anthropic's Messages
stream sends ``message_start`` (the model, input tokens) and ``message_delta``
(cumulative output tokens).
"""

from __future__ import annotations

from typing import Any

from greenml.llm.remote.usage import ProxyEnergy, Tokens, as_mapping, parse_energy, parse_tokens

COUNTED = (
    "counted from stream chunks (the stream sent no usage: ask for stream_options.include_usage)"
)


class OpenAITally:
    """Reads OpenAI ``ChatCompletionChunk``/``Completion`` chunks."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.tokens: Tokens | None = None
        self.energy: ProxyEnergy | None = None
        self.content_chunks = 0

    def feed(self, chunk: Any) -> None:
        model = getattr(chunk, "model", None)
        if isinstance(model, str) and model:
            self.model = model
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.tokens = parse_tokens(usage)
            self.energy = parse_energy(usage) or self.energy
        for choice in getattr(chunk, "choices", None) or ():
            delta = getattr(choice, "delta", None)
            text = (
                getattr(delta, "content", None)
                if delta is not None
                else getattr(choice, "text", None)
            )
            if text:
                self.content_chunks += 1

    def result(self, prompt_estimate: int) -> tuple[int, int, str]:
        """Input and output tokens and where they come from."""
        if self.tokens is not None and self.tokens.output_tokens is not None:
            return self.tokens.input_tokens or 0, self.tokens.output_tokens, "usage"
        return (
            prompt_estimate,
            self.content_chunks,
            COUNTED + "; input tokens approximated (4 characters a token)",
        )


class AnthropicTally:
    """Reads Anthropic Messages stream events."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.energy: ProxyEnergy | None = None
        self.text_deltas = 0

    def feed(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            message = getattr(event, "message", None)
            model = getattr(message, "model", None)
            if isinstance(model, str) and model:
                self.model = model
            self._usage(getattr(message, "usage", None))
        elif kind == "message_delta":
            self._usage(getattr(event, "usage", None))
        elif kind == "content_block_delta":
            self.text_deltas += 1

    def _usage(self, usage: Any) -> None:
        if usage is None:
            return
        tokens = parse_tokens(usage)
        data = as_mapping(usage)
        if data.get("input_tokens") is not None and tokens.input_tokens is not None:
            self.input_tokens = tokens.input_tokens
        if tokens.output_tokens is not None:
            self.output_tokens = tokens.output_tokens  # cumulative in message_delta
        self.energy = parse_energy(usage) or self.energy

    def result(self, prompt_estimate: int) -> tuple[int, int, str]:
        if self.output_tokens is not None:
            source = "usage" if self.input_tokens is not None else "usage (input approximated)"
            return (
                self.input_tokens if self.input_tokens is not None else prompt_estimate,
                self.output_tokens,
                source,
            )
        return prompt_estimate, self.text_deltas, COUNTED
