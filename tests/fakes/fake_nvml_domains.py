"""Power domains beside the board, for the fake NVML: ``nvmlDeviceGetFieldValues`` with a
power scope (module, memory), as 12.x drivers give them on Hopper and Grace Hopper.

A GH200's module power is its GPU power plus the Grace CPU's and the LPDDR's
(``module_extra_w``); memory power is ``memory_share`` of the board's. A scope the GPU
lacks answers NotSupported in that value's ``nvmlReturn``, as the real call does.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.fakes.fake_pynvml import FakeNvml, _Handle

NOT_SUPPORTED = 3
FI_POWER_INSTANT = 186


class DomainFakeNvml(FakeNvml):
    """:class:`FakeNvml` with module and memory power field values."""

    def __init__(self, *args: Any, module_extra_w: float | None = None,
                 memory_share: float | None = None, **kw: Any) -> None:  # fmt: skip
        super().__init__(*args, **kw)
        self.module_extra_w = module_extra_w
        self.memory_share = memory_share

    def nvmlDeviceGetFieldValues(self, h: _Handle, field_ids: list[Any]) -> list[Any]:
        spec = self._gpu(h, "nvmlDeviceGetFieldValues")
        board_w = spec.phase_at(self.clock()).power_w
        out = []
        for field_id in field_ids:
            fid, scope = field_id if isinstance(field_id, tuple) else (field_id, 0)
            watts: float | None = None
            if fid == FI_POWER_INSTANT and scope == 0:
                watts = board_w
            elif fid == FI_POWER_INSTANT and scope == 1 and self.module_extra_w is not None:
                watts = board_w + self.module_extra_w
            elif fid == FI_POWER_INSTANT and scope == 2 and self.memory_share is not None:
                watts = board_w * self.memory_share
            code = 0 if watts is not None else NOT_SUPPORTED
            value = SimpleNamespace(uiVal=round((watts or 0) * 1000))
            out.append(SimpleNamespace(fieldId=fid, scopeId=scope, nvmlReturn=code, value=value))
        return out
