"""ONNX Runtime variants: the model exported to ONNX, and its dynamic-INT8 quantization.

Export tries ``torch.export`` (the default exporter since PyTorch 2.9), then the
TorchScript tracer. A trace that warns it will not generalise (data-dependent
Python control flow baked into the graph) is refused: the backend is skipped
with both reasons, never run on a graph that silently took one branch.

Lazy imports: torch (~1 s) and onnx and onnxruntime (~0.1 s) are imported inside the
functions that use them, so importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from greenml.compress.tensors import device_of
from greenml.compress.variants import BuildContext, Built, Predict
from greenml.errors import CompressError, NotApplicable

_CACHE_KEY = "onnx-export"


def build_onnx(ctx: BuildContext) -> Built:
    """The model as an fp32 ONNX graph in an ONNX Runtime session.

    Raises:
        NotApplicable: onnx/onnxruntime missing, or the model cannot be exported.
    """
    data, notes = export_onnx(ctx)
    return Built(_session_predict(data, ctx), len(data), "ONNX file", None, list(notes))


def build_onnx_int8(ctx: BuildContext) -> Built:
    """The exported graph quantized by ``onnxruntime.quantization.quantize_dynamic`` (QInt8).

    Raises:
        NotApplicable: The export itself is not possible (same reason as ``onnx``).
    """
    data, export_notes = export_onnx(ctx)
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load_from_string(data)
    # The exporter's value_info can disagree with ONNX's shape inference once
    # Gemm weights are folded; the quantizer re-infers shapes and would refuse.
    del graph.graph.value_info[:]
    with tempfile.TemporaryDirectory(prefix="greenml-onnx-") as tmp:
        source, target = Path(tmp, "model.onnx"), Path(tmp, "model.int8.onnx")
        onnx.save(graph, source)
        with _quiet(), _drop_log("Please consider to run pre-processing"):
            quantize_dynamic(source, target, weight_type=QuantType.QInt8)
        quantized = target.read_bytes()
    notes = [*export_notes, "onnxruntime.quantization.quantize_dynamic, QInt8 weights"]
    return Built(_session_predict(quantized, ctx), len(quantized), "ONNX file", None, notes)


def export_onnx(ctx: BuildContext) -> tuple[bytes, tuple[str, ...]]:
    """The ONNX bytes of the model (exported once per context), and how they were made.

    Raises:
        NotApplicable: The packages are missing, or neither exporter can export it.
    """
    cached = ctx.cache.get(_CACHE_KEY)
    if isinstance(cached, NotApplicable):
        raise NotApplicable(f"needs the ONNX export, which is not possible: {cached}")
    if cached is not None:
        data, notes = cached
        return bytes(data), tuple(notes)
    try:
        result = _export(ctx)
    except NotApplicable as exc:
        ctx.cache[_CACHE_KEY] = exc
        raise
    ctx.cache[_CACHE_KEY] = result
    return result


def _export(ctx: BuildContext) -> tuple[bytes, tuple[str, ...]]:
    try:
        import onnx  # noqa: F401 - both exporters need it
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        missing = f"{exc.name} is not installed"
        raise NotApplicable(f"{missing}: pip install 'greenml[compress]'") from exc
    model = copy.deepcopy(ctx.model).eval()
    with tempfile.TemporaryDirectory(prefix="greenml-onnx-") as tmp:
        path = Path(tmp, "model.onnx")
        try:
            _export_dynamo(model, ctx.inputs, path)
            return path.read_bytes(), ("exported with torch.export (dynamo)",)
        except Exception as exc:
            dynamo_reason = _summary(exc)
        try:
            _export_torchscript(model, ctx.inputs, path)
        except NotApplicable as exc:
            raise NotApplicable(f"torch.export failed ({dynamo_reason}); {exc}") from None
        except Exception as exc:
            raise NotApplicable(
                f"cannot export to ONNX: torch.export failed ({dynamo_reason}); the TorchScript "
                f"exporter failed ({_summary(exc)})"
            ) from None
        note = f"exported with the TorchScript tracer (torch.export failed: {dynamo_reason})"
        return path.read_bytes(), (note,)


def _export_dynamo(model: Any, args: tuple[Any, ...], path: Path) -> None:
    import torch
    from torch.export import Dim

    shapes = tuple({i: Dim.AUTO for i in range(a.ndim)} for a in args)
    with _quiet():
        torch.onnx.export(model, args, str(path), dynamo=True, external_data=False,
                          dynamic_shapes=shapes, verbose=False)  # fmt: skip


def _export_torchscript(model: Any, args: tuple[Any, ...], path: Path) -> None:
    import torch

    names = [f"input{i}" for i in range(len(args))]
    axes = {n: {d: f"{n}_dim{d}" for d in range(a.ndim)} for n, a in zip(names, args, strict=True)}
    with warnings.catch_warnings(record=True) as caught, _quiet():
        warnings.simplefilter("always")
        torch.onnx.export(model, args, str(path), dynamo=False, input_names=names,
                          dynamic_axes=axes)  # fmt: skip
    tracer = [w for w in caught if w.category.__name__ == "TracerWarning"]
    if tracer:
        first = str(tracer[0].message).split(". ")[0]
        raise NotApplicable(
            f"the TorchScript trace would not generalise ({first}): the model has "
            "data-dependent control flow"
        )


def _session_predict(data: bytes, ctx: BuildContext) -> Predict:
    """A predict callable over an ONNX Runtime session: torch in, torch out (model's device)."""
    import onnxruntime as ort
    import torch

    device = device_of(ctx.model)
    wanted = ["CUDAExecutionProvider"] if device.type == "cuda" else []
    providers = [p for p in wanted if p in ort.get_available_providers()]
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only
    if ctx.options.threads is not None:
        options.intra_op_num_threads = ctx.options.threads
    session = ort.InferenceSession(data, options, providers=[*providers, "CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(ctx.inputs):
        raise CompressError(
            f"the ONNX graph takes {len(names)} inputs, the model {len(ctx.inputs)} "
            "(an unused input was dropped by the exporter)"
        )

    def predict(*args: Any) -> Any:
        feed = {n: a.detach().cpu().numpy() for n, a in zip(names, args, strict=True)}
        outputs = [torch.from_numpy(o).to(device) for o in session.run(None, feed)]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    return predict


def _summary(exc: BaseException) -> str:
    """One line about an exporter's exception (their messages run to pages)."""
    text = str(exc)
    if "## Exception summary" in text:
        text = text.split("## Exception summary", 1)[1]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if first.startswith("<class '"):  # "<class 'pkg.Error'>: message" → "Error: message"
        kind, _, rest = first.partition(">: ")
        first = f"{kind.rsplit('.', 1)[-1].rstrip(chr(39))}: {rest}"
    first = first or type(exc).__name__
    return first if len(first) <= 200 else first[:199] + "…"


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Exporters print progress, graphs and warnings; the user sees our one-line reason."""
    names = ("torch.onnx", "torch.export", "torch._dynamo", "torch.fx", "onnxscript")
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    sink = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                yield
        finally:
            for lg, level in zip(loggers, levels, strict=True):
                lg.setLevel(level)


@contextlib.contextmanager
def _drop_log(prefix: str) -> Iterator[None]:
    """Drop root-logger records starting with ``prefix`` (onnxruntime's pre-processing hint)."""

    def keep(record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(prefix)

    root = logging.getLogger()
    root.addFilter(keep)
    try:
        yield
    finally:
        root.removeFilter(keep)

