"""Turning a payload into checkpoint bytes: CPU snapshots and a hashing ``torch.save``.

:func:`snapshot` is what the asynchronous mode does in the caller: every
tensor is detached and copied to CPU memory, everything else deep-copied, so
the training loop may move on while a background thread writes the copy.
:func:`torch_writer` serializes with ``torch.save`` through a hashing wrapper,
so the manifest's SHA-256 costs no second read of the file.

Lazy imports: torch (~1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import IO, Any

from greenml.errors import CheckpointError
from greenml.resilience.manifest import FileEntry, HashingWriter


def torch_writer(
    state: Mapping[str, Any], entries: dict[str, FileEntry], name: str
) -> Callable[[IO[bytes]], None]:
    """A writer that ``torch.save``s ``state`` and records the file's hash in ``entries``."""

    def write(f: IO[bytes]) -> None:
        import torch

        writer = HashingWriter(f)
        try:
            torch.save(state, writer)  # type: ignore[arg-type]  # any object with write()
        except OSError:
            raise
        except Exception as exc:
            if writer.error is not None:  # torch re-raised a write error as its own type
                raise writer.error from exc
            raise CheckpointError(f"cannot serialize the checkpoint state: {exc}") from exc
        entries[name] = writer.entry

    return write


def snapshot(obj: Any) -> Any:
    """A deep copy whose tensors are detached copies in CPU memory."""
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, OrderedDict):
        return OrderedDict((k, snapshot(v)) for k, v in obj.items())
    if isinstance(obj, dict):
        return {k: snapshot(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [snapshot(v) for v in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(snapshot(v) for v in obj)
    return copy.deepcopy(obj)
