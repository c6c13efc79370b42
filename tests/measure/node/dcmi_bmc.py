"""A BMC that answers DCMI Get Power Reading, on pyghmi's IPMI 2.0 (RMCP+) server.

Run as ``python dcmi_bmc.py PORT WATTS``. The LAN session, authentication and
message framing are pyghmi's (``pyghmi.ipmi.bmc.Bmc``, the server VirtualBMC
uses); this adds only the one DCMI command, encoded as DCMI 1.5 §6.6.1 gives it:
NetFn 0x2C (group extension), command 0x02, group id 0xDC; the answer is the
group id, current/minimum/maximum/average power (16-bit LSB first, watts), a
timestamp (32-bit), the statistics period (32-bit, ms) and the reading state
(bit 6: active).
"""

from __future__ import annotations

import struct
import sys
import time
from typing import Any

import pyghmi.ipmi.bmc as bmc

DCMI_NETFN = 0x2C
GET_POWER_READING = 0x02
DCMI_GROUP = 0xDC


class DcmiBmc(bmc.Bmc):  # type: ignore[misc]
    def __init__(self, watts: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.watts = watts

    def handle_raw_request(self, request: dict[str, Any], session: Any) -> None:
        if request["netfn"] == DCMI_NETFN and request["command"] == GET_POWER_READING:
            w = self.watts
            data = struct.pack("<BHHHHIIB", DCMI_GROUP, w, w - 20, w + 40, w - 5,
                               int(time.time()), 1000, 0x40)  # fmt: skip
            session.send_ipmi_response(code=0x00, data=list(data))
            return
        super().handle_raw_request(request, session)


if __name__ == "__main__":
    port, watts = int(sys.argv[1]), int(sys.argv[2])
    DcmiBmc(watts, authdata={"admin": "password"}, port=port, address="127.0.0.1").listen()
