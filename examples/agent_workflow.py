"""An agent workflow whose model calls, tool call and local compute add up to one figure.

Point it at any OpenAI-compatible server — a greenml proxy (its calls are then
*measured*), an engine directly or OpenAI itself (*estimated* from the model's size):

    python examples/agent_workflow.py --base-url http://127.0.0.1:8790/v1 --model llama-3.1-8b
    python examples/agent_workflow.py --base-url … --db runs.db --ci 300
    greenml report sci <run id> --per workflow --db runs.db

``--base-url`` defaults to ``OPENAI_BASE_URL``; the key to ``OPENAI_API_KEY`` (any text
for a local server). With ``--db`` the workflow is a ``greenml.Run`` (local compute
measured, the calls stored in its record); without, a ``Workflow`` that prints its total.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Any

import openai

import greenml
from greenml.llm.remote import Workflow, instrument, tool


def lookup(n: int) -> int:
    """A 'tool': some local compute (the number of primes below n)."""
    sieve = bytearray([1]) * n
    sieve[:2] = b"\x00\x00"
    for i in range(2, int(n**0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(sieve[i * i :: i]))
    return sum(sieve)


def agent(client: Any, model: str) -> str:
    plan = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "Plan three steps to count primes below 100000."}],
        max_tokens=32,
    )
    with tool("lookup"):
        primes = lookup(100_000)
    stream = client.chat.completions.create(
        model=model,
        messages=[
            {"role": "assistant", "content": plan.choices[0].message.content or ""},
            {"role": "user", "content": f"The tool found {primes} primes. Summarize."},
        ],
        max_tokens=32,
        stream=True,
        stream_options={"include_usage": True},
    )
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"))
    parser.add_argument("--model", default="llama-3.1-8b")
    parser.add_argument("--country", help="where the server's electricity comes from (ISO code)")
    parser.add_argument("--db", help="store the workflow as a greenml run in this store")
    parser.add_argument("--ci", type=float, help="local grid intensity, g/kWh (with --db)")
    args = parser.parse_args()
    client = instrument(
        openai.OpenAI(base_url=args.base_url, api_key=os.environ.get("OPENAI_API_KEY", "local")),
        country=args.country,
    )
    run = greenml.Run("agent-workflow", db=args.db, ci=args.ci) if args.db else None
    with run or contextlib.nullcontext(), Workflow("agent-workflow") as wf:
        answer = agent(client, args.model)
    print(f"answer: {answer.strip()[:60]}")
    total = wf.total()
    print(f"measured: {total.measured.calls} calls, {total.measured.energy_j:.4g} J")
    print(
        f"estimated: {total.estimated.calls} calls, {total.estimated.energy_j:.4g} J "
        f"± {total.estimated.uncertainty_j:.2g} J"
    )
    if run is not None and run.record is not None:
        print(f"run {run.record.id}: greenml report sci {run.record.id} --per workflow")


if __name__ == "__main__":
    main()
