"""notebooks/analysis.ipynb executes (nbclient) on a small results set passed by T3SIM_RESULTS."""

from __future__ import annotations

import os

import pytest

from tests.analysis.fakes import write_fake_results
from tests.conftest import REPO

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")


def test_analysis_notebook_runs(tmp_path, monkeypatch):
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    write_fake_results(tmp_path / "results", quick=True, only={"t3-sublayers", "fig17"})
    monkeypatch.setattr(os, "fsync", real)
    monkeypatch.setenv("T3SIM_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("T3SIM_FIGURES", str(tmp_path / "figs"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(REPO / "notebooks" / "analysis.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4  # figs 15, 16, 17, 18 at least
    assert (tmp_path / "figs" / "fig16.png").is_file()
