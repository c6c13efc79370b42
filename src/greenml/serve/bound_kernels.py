"""NumPy kernels of the exact index's bounds: a one-thread dot, popcount, smallest sums.

Lazy imports: numpy is imported inside the functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]


def dot(rows: Any, q: Any, out: Any = None) -> Any:
    """rows @ q, single-threaded: a BLAS matvec wakes its thread pool, which on a busy
    machine can stall for milliseconds waiting for a thread to be scheduled."""
    import numpy as np

    if hasattr(np, "vecdot"):  # numpy >= 2.0
        return np.vecdot(rows, q, out=out)
    return np.einsum("ij,j->i", rows, q, out=out)


_BYTE_COUNTS: Any = None


def popcount(words: Any, out: Any) -> None:
    """Set bits of each uint64 into ``out`` (uint8); a byte table before numpy 2.0."""
    import numpy as np

    if hasattr(np, "bitwise_count"):
        np.bitwise_count(words, out=out)
        return
    global _BYTE_COUNTS
    if _BYTE_COUNTS is None:
        _BYTE_COUNTS = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
    per_byte = _BYTE_COUNTS[words.view(np.uint8).reshape(*words.shape, 8)]
    per_byte.sum(axis=-1, dtype=np.uint8, out=out)


def smallest_sums(v: Vectors) -> tuple[Any, Any]:
    """ℓ(h), the sums of the h smallest |v_i|, and 1 / max(h, 1), for h = 0..dim."""
    import numpy as np

    sums = np.zeros(v.shape[0] + 1, dtype=np.float32)
    sums[1:] = np.cumsum(np.sort(np.abs(v.astype(np.float64))))
    inverse = 1.0 / np.maximum(np.arange(v.shape[0] + 1, dtype=np.float32), 1.0)
    return sums, inverse
