"""What gets shipped: the wheel holds every package and the built C accelerator; the image copies them all.

The Docker image once left ``cleaner`` out (the broker could not start in it).
No Docker daemon runs here, so the Dockerfile is checked against the package
list in ``pyproject.toml``; the wheel itself is built for real.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _packages() -> list[str]:
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted(name.rstrip("*") for name in include)


def test_the_image_build_copies_every_package_and_the_build_hook():
    copied = set(re.findall(r"^COPY\s+(\S+)", (ROOT / "docker" / "Dockerfile").read_text(), re.M))
    for package in _packages():
        assert package in copied, f"docker/Dockerfile does not copy {package}"
    sources = " ".join(re.findall(r"^COPY\s+(?!--from)(.+)$", (ROOT / "docker" / "Dockerfile").read_text(), re.M))
    assert "pyproject.toml" in sources and "setup.py" in sources


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_wheel_holds_every_package_and_the_accelerator(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True, timeout=280)  # fmt: skip
    (wheel,) = tmp_path.glob("minibroker-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for package in _packages():  # broker is a namespace package: look for its modules
        assert any(n.startswith(f"{package}/") and n.endswith(".py") for n in names), package
    if shutil.which("cc"):
        assert any(re.fullmatch(r"protocol/records/_cdownconvert\..*\.so", n) for n in names), names
