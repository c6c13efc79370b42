"""EnergyMiddleware on real Starlette and FastAPI apps, with fake power of known watts."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from greenml.measure.measurement import POWER_INTEGRATED
from greenml.measure.meter import Meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.serve.middleware import EnergyMiddleware
from greenml.serve.requests import RequestMeter
from tests.helpers import ManualClock
from tests.serve.conftest import WALL_OFFSET, fake_meter, sample_at

WATTS = 80.0


def item(request: Request) -> JSONResponse:
    time.sleep(0.01)
    return JSONResponse({"id": request.path_params["item_id"]})


def health(request: Request) -> PlainTextResponse:
    return PlainTextResponse("ok")


def test_starlette_requests_get_their_energy_per_route() -> None:
    device = FakeDevice("cpu0", [(0.0, WATTS)], method=POWER_INTEGRATED)
    meter = Meter(sensors=[FakeSensor([device])], sample_hz=0)
    rm = RequestMeter(meter, settle_every_s=0, guard_s=0)
    app = Starlette(routes=[Route("/items/{item_id}", item), Route("/health", health)])
    app.add_middleware(EnergyMiddleware, request_meter=rm)
    bare = Starlette(routes=[Route("/health", health)])
    with TestClient(app) as client, TestClient(bare) as plain:
        assert client.get("/items/7").json() == {"id": "7"}
        assert client.get("/items/8").json() == {"id": "8"}
        measured, unmeasured = client.get("/health"), plain.get("/health")
        assert client.get("/nowhere").status_code == 404
    # the response is untouched: same body, same headers
    assert measured.text == unmeasured.text
    assert dict(measured.headers) == dict(unmeasured.headers)
    meter.sample_now()
    report = rm.report()
    routes = {r.route: r for r in report.routes}
    assert set(routes) == {"GET /items/{item_id}", "GET /health", "GET <unmatched>"}
    items = routes["GET /items/{item_id}"]
    assert items.requests == 2
    assert items.duration_s >= 0.02
    # one request at a time at constant power: each gets all of it while it runs
    assert items.energy_j == pytest.approx(WATTS * items.duration_s, rel=1e-6)
    assert report.idle_energy_j > 0  # the time between requests, charged to none
    meter.close()


def test_fastapi_concurrent_requests_split_power_by_overlap(clock: ManualClock) -> None:
    meter = fake_meter(clock, [(0.0, 100.0)])
    rm = RequestMeter(
        meter, settle_every_s=0, guard_s=0, clock=clock, wall_clock=lambda: clock() + WALL_OFFSET
    )
    api = FastAPI()
    inside = {"a": asyncio.Event(), "b": asyncio.Event()}
    release = {"a": asyncio.Event(), "b": asyncio.Event()}

    @api.get("/work/{name}")
    async def work(name: str) -> dict[str, str]:
        inside[name].set()
        await release[name].wait()
        return {"done": name}

    app = EnergyMiddleware(api, rm)

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            clock.now = 101.0  # A starts at t=1
            a = asyncio.create_task(client.get("/work/a"))
            await inside["a"].wait()
            clock.now = 102.0  # B starts at t=2
            b = asyncio.create_task(client.get("/work/b"))
            await inside["b"].wait()
            clock.now = 104.0  # A ends at t=4
            release["a"].set()
            assert (await a).json() == {"done": "a"}
            clock.now = 106.0  # B ends at t=6
            release["b"].set()
            assert (await b).json() == {"done": "b"}

    asyncio.run(scenario())
    sample_at(meter, clock, [10])
    seen = []
    rm.add_listener(seen.append)
    report = rm.report()
    got = sorted((round(s.start_s - WALL_OFFSET - 100.0, 6), s.energy_j) for s in seen)
    # A: 1-2 s alone (100 J) + 2-4 s shared (100 J); B: 2-4 s shared (100 J) + 4-6 s alone (200 J)
    assert got == [(1.0, pytest.approx(200.0)), (2.0, pytest.approx(300.0))]
    (route,) = report.routes
    assert route.route == "GET /work/{name}" and route.requests == 2
    assert report.idle_energy_j == pytest.approx(100.0 + 400.0)  # 0-1 s and 6-10 s


def test_non_http_scopes_pass_through(clock: ManualClock) -> None:
    meter = fake_meter(clock, [(0.0, 100.0)])
    rm = RequestMeter(meter, settle_every_s=0, guard_s=0, clock=clock)
    calls = []

    async def inner(scope: dict, receive: object, send: object) -> None:
        calls.append(scope["type"])

    app = EnergyMiddleware(inner, rm)
    asyncio.run(app({"type": "lifespan"}, None, None))  # type: ignore[arg-type]
    asyncio.run(app({"type": "websocket", "path": "/ws"}, None, None))  # type: ignore[arg-type]
    assert calls == ["lifespan", "websocket"]
    assert rm.report().routes == () and rm.finished_counts() == {}
