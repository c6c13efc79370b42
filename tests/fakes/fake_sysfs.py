"""Fake sysfs/procfs trees laid out as the Linux documentation describes them.

- hwmon (Documentation/hwmon/sysfs-interface.rst): ``/sys/class/hwmon/hwmonN/name``,
  ``energyN_input`` in µJ, ``powerN_input`` in µW, ``inN_input`` in mV, ``currN_input``
  in mA, ``*_label``.
- amd_energy (Documentation/hwmon/amd_energy.rst, v5.9): ``Ecore000``… one channel per
  core, then ``Esocket0``… per socket, energy in µJ, 64-bit accumulated in the driver.
- ina3221 (Documentation/hwmon/ina3221.rst): ``in[123]_label`` rail names,
  ``in[123]_input`` bus voltage (mV), ``curr[123]_input`` (mA), ``in[123]_enable``.
- powercap (Documentation/power/powercap/powercap.rst): zones ``intel-rapl:N`` with
  ``name``, ``energy_uj`` and ``max_energy_range_uj``; AMD Zen has ``package-N`` and
  ``core`` subzones, no ``dram``.
- PCI: ``/sys/bus/pci/devices/*/vendor`` and ``class`` (0x030000 display, 0x120000
  processing accelerator).
"""

from __future__ import annotations

from pathlib import Path

MAX_UJ = 262_143_328_850  # a real package max_energy_range_uj


class FakeMachine:
    """A machine's root: /proc/cpuinfo, PCI devices, powercap zones and hwmon chips."""

    def __init__(self, root: Path, vendor: str = "AuthenticAMD", model: str = "AMD EPYC 7763 64-Core Processor", rapl_flag: bool = True) -> None:  # noqa: E501
        self.root = root
        self._chips = 0
        self._pci = 0
        flags = "fpu vme de pse tsc msr" + (" rapl" if rapl_flag else "")
        cpuinfo = root / "proc" / "cpuinfo"
        cpuinfo.parent.mkdir(parents=True, exist_ok=True)
        cpuinfo.write_text(
            f"processor\t: 0\nvendor_id\t: {vendor}\nmodel name\t: {model}\n"
            f"physical id\t: 0\nflags\t\t: {flags}\n\n"
        )

    def path(self, rel: str) -> Path:
        return self.root / rel.lstrip("/")

    def pci(self, vendor: str, cls: str = "0x030000") -> Path:
        dev = self.path(f"sys/bus/pci/devices/0000:{self._pci:02x}:00.0")
        self._pci += 1
        dev.mkdir(parents=True)
        (dev / "vendor").write_text(vendor + "\n")
        (dev / "class").write_text(cls + "\n")
        return dev

    def rapl_zone(self, rel: str, name: str, energy_uj: int = 0, max_uj: int = MAX_UJ) -> Path:
        zone = self.path("sys/class/powercap") / rel
        zone.mkdir(parents=True)
        (zone / "name").write_text(name + "\n")
        (zone / "energy_uj").write_text(f"{energy_uj}\n")
        (zone / "max_energy_range_uj").write_text(f"{max_uj}\n")
        return zone

    def hwmon(self, name: str, files: dict[str, str | int]) -> Path:
        chip = self.path("sys/class/hwmon") / f"hwmon{self._chips}"
        self._chips += 1
        chip.mkdir(parents=True)
        (chip / "name").write_text(name + "\n")
        for fname, value in files.items():
            (chip / fname).write_text(f"{value}\n")
        return chip

    def amd_energy(self, cores: int = 2, socket_uj: int = 5_000_000) -> Path:
        files: dict[str, str | int] = {}
        for n in range(cores):
            files[f"energy{n + 1}_label"] = f"Ecore{n:03d}"
            files[f"energy{n + 1}_input"] = 1_000_000 * (n + 1)
        files[f"energy{cores + 1}_label"] = "Esocket0"
        files[f"energy{cores + 1}_input"] = socket_uj
        return self.hwmon("amd_energy", files)

    def jetson_orin(self, in_mw: tuple[int, int, int] = (5000, 2000, 1500)) -> Path:
        """A Jetson Orin NX: L4T release file and one INA3221 (VDD_IN, VDD_CPU_GPU_CV, VDD_SOC)."""
        release = self.path("etc/nv_tegra_release")
        release.parent.mkdir(parents=True, exist_ok=True)
        release.write_text("# R35 (release), REVISION: 4.1\n")
        files: dict[str, str | int] = {}
        labels = ("VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC")
        for n, (label, mw) in enumerate(zip(labels, in_mw, strict=True), 1):
            files[f"in{n}_label"] = label
            files[f"in{n}_input"] = 5000  # 5 V rails (mV)
            files[f"curr{n}_input"] = mw // 5  # mA, so V × I = mw
            files[f"in{n}_enable"] = 1
        files["in7_label"] = "sum of shunt voltages"
        files["in7_input"] = 120
        return self.hwmon("ina3221", files)
