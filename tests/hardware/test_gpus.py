"""The GPU table: lookups by NVML names and aliases, datasheet figures, precisions."""

from __future__ import annotations

import csv
from importlib import resources

import pytest

from greenml.errors import ConfigError
from greenml.hardware import PRECISIONS, GpuSpec, gpu_spec, gpu_specs

REQUIRED = [
    "V100 SXM2 16GB",
    "V100 SXM2 32GB",
    "V100 PCIe 16GB",
    "V100 PCIe 32GB",
    "V100S PCIe",
    "A100 SXM4 40GB",
    "A100 SXM4 80GB",
    "A100 PCIe 40GB",
    "A100 PCIe 80GB",
    "A10",
    "A10G",
    "L4",
    "T4",
    "H100 SXM",
    "H100 PCIe",
    "H200 SXM",
    "B200",
    "RTX 3090 Ti",
    "RTX 4090",
    "RTX A6000",
    "MI250X",
    "MI300X",
    "TPU v4",
    "TPU v5e",
    "P100 SXM2 16GB",
    "P100 PCIe 16GB",
    "TPU v2",
    "TPU v3",
]


def test_table_has_the_required_devices_and_columns() -> None:
    names = [s.name for s in gpu_specs()]
    assert set(REQUIRED) <= set(names)
    assert len(names) == len(set(names))
    text = (resources.files("greenml") / "data" / "gpus.csv").read_text(encoding="utf-8")
    header = next(csv.reader(text.splitlines()))
    for column in ("name", "aliases", "vendor", "architecture", "tdp_w", "memory_gb",
                   *PRECISIONS.values(), "bf16_supported", "source"):  # fmt: skip
        assert column in header


def test_every_row_is_sane() -> None:
    for s in gpu_specs():
        assert s.source, s.name
        assert s.memory_gb > 0
        assert s.tdp_w is None or 10 <= s.tdp_w <= 1500
        assert s.precisions(), s.name
        if s.fp16_tflops and s.fp16_tflops_sparse:
            # Sparse is 2× dense, or 4× on GeForce (FP16-accumulate marketing figure);
            # the L40S datasheet's own pair (362.05 | 733) is 2.02×.
            ratio = s.fp16_tflops_sparse / s.fp16_tflops
            assert ratio == pytest.approx(2, rel=0.03) or ratio == pytest.approx(4, rel=0.01)
        if s.bf16_tflops is not None:
            assert s.bf16_supported, s.name


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),  # NVML
        ("H100", "H100 SXM"),
        ("h100-80gb", "H100 SXM"),  # Llama 3.1 model card
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
        ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
        ("A100 40GB", "A100 SXM4 40GB"),
        ("A100 SXM", "A100 SXM4 80GB"),
        ("Tesla V100-SXM2-16GB", "V100 SXM2 16GB"),
        ("Tesla V100-PCIE-32GB", "V100 PCIe 32GB"),
        ("Tesla V100S-PCIE-32GB", "V100S PCIe"),
        ("v100s", "V100S PCIe"),
        ("Tesla T4", "T4"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA GeForce RTX 3090 Ti", "RTX 3090 Ti"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("NVIDIA RTX A6000", "RTX A6000"),
        ("AMD Instinct MI300X", "MI300X"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA B200", "B200"),
        ("TPU v4", "TPU v4"),
        ("TPU v5 lite", "TPU v5e"),
        ("P100", "P100 SXM2 16GB"),  # Strubell et al. 2019
        ("Tesla P100-PCIE-16GB", "P100 PCIe 16GB"),
        ("TPUv3", "TPU v3"),
        ("TPU v2", "TPU v2"),
    ],
)
def test_lookup_by_nvml_name_and_alias(query: str, name: str) -> None:
    assert gpu_spec(query).name == name


@pytest.mark.parametrize(
    ("name", "tdp_w", "memory_gb", "fp16", "bf16"),
    [
        ("V100 SXM2 32GB", 300, 32, 125, None),
        ("V100 PCIe 16GB", 250, 16, 112, None),
        ("V100S PCIe", 250, 32, 130, None),
        ("A100 SXM4 40GB", 400, 40, 312, 312),
        ("A100 PCIe 80GB", 300, 80, 312, 312),
        ("A10", 150, 24, 125, 125),
        ("L4", 72, 24, 121, 121),
        ("T4", 70, 16, 65, None),
        ("H100 SXM", 700, 80, 989.5, 989.5),
        ("H100 PCIe", 350, 80, 756.5, 756.5),
        ("H200 SXM", 700, 141, 989.5, 989.5),
        ("B200", 1000, 180, 2250, 2250),
        ("RTX 4090", 450, 24, 165.2, 165.2),
        ("MI300X", 750, 192, 1307.4, 1307.4),
        ("TPU v4", 192, 32, None, 275),
        ("P100 SXM2 16GB", 300, 16, 21.2, None),
        ("P100 PCIe 16GB", 250, 16, 18.7, None),
        ("TPU v2", 280, 16, None, 45),
        ("TPU v3", 450, 32, None, 123),
    ],
)
def test_datasheet_figures_are_dense(
    name: str, tdp_w: float, memory_gb: float, fp16: float | None, bf16: float | None
) -> None:
    s = gpu_spec(name)
    assert (s.tdp_w, s.memory_gb, s.fp16_tflops, s.bf16_tflops) == (tdp_w, memory_gb, fp16, bf16)


def test_sparse_figures_are_kept_apart() -> None:
    assert gpu_spec("RTX A6000").peak_tflops("fp16_sparse") == 309.7
    assert gpu_spec("RTX A6000").peak_tflops("fp16") == 154.8
    assert gpu_spec("H100 SXM").peak_tflops("fp16-sparse") == 1979
    assert gpu_spec("RTX 3090").peak_tflops("fp16_sparse") == 285
    assert gpu_spec("RTX 3090 Ti").peak_tflops("fp16_sparse") == 320


def test_peak_tflops_per_precision() -> None:
    a100 = gpu_spec("A100")
    assert [a100.peak_tflops(p) for p in ("fp32", "tf32", "fp16", "bf16", "int8")] == [
        19.5, 156, 312, 312, 624
    ]  # fmt: skip
    assert a100.peak_tflops("BF16") == 312


def test_missing_precision_is_a_config_error_naming_what_exists() -> None:
    with pytest.raises(ConfigError, match=r"V100S PCIe has no bf16 .* fp32, fp16"):
        gpu_spec("V100S").peak_tflops("bf16")
    with pytest.raises(ConfigError, match="no fp16 peak"):
        gpu_spec("TPU v4").peak_tflops("fp16")
    with pytest.raises(ConfigError, match="unknown precision 'fp8'"):
        gpu_spec("H100").peak_tflops("fp8")


def test_unknown_gpu_lists_five_closest_names() -> None:
    with pytest.raises(ConfigError) as err:
        gpu_spec("H1000")
    message = str(err.value)
    assert message.startswith("unknown GPU 'H1000'; closest: ")
    closest = message.split("closest: ")[1].split(", ")
    assert len(closest) == 5
    assert closest[0] == "H100 SXM"


def test_memory_that_matches_no_board_is_unknown() -> None:
    with pytest.raises(ConfigError, match="unknown GPU 'A100 48GB'"):
        gpu_spec("A100 48GB")


def test_spec_is_frozen() -> None:
    s = gpu_spec("T4")
    assert isinstance(s, GpuSpec)
    with pytest.raises(AttributeError):
        s.tdp_w = 1.0  # type: ignore[misc]
