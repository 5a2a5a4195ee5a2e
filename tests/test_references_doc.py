"""docs/references.md lists what the configs cite: every document of a known list that a parameter's source or a preset
(configs/**/*.yaml) names has its entry there, and the page's links to files of this tree resolve."""

from __future__ import annotations

import re

from t3sim.config.params import iter_params
from tests.conftest import REPO

DOC = REPO / "docs/references.md"

#: a document as sources name it (regex) -> the text its entry in docs/references.md holds
KNOWN = {
    r"\bpaper (Table|Sec)|T3 paper|ASPLOS'24": "Transparent Tracking & Triggering",
    r"FLUX|Chang et al": "FLUX: Fast Software-based Communication Overlap",
    r"FiCCO": "Design Space Exploration of DMA based Finer-Grain Compute Communication Overlap",
    r"fused-collective paper|fused computation-collective paper|Punniyamurthy":
        "Optimizing Distributed ML Communication with Fused Computation-Collective Operations",
    r"Accel-Sim|QV100": "Accel-Sim", r"GPGPU-Sim|gpgpu-sim": "GPGPU-Sim", r"Ramulator": "Ramulator 2",
    r"DRAMsim3": "DRAMsim3", r"gem5": "gem5", r"TBPoint": "TBPoint", r"Photon": "Photon", r"\bPKA\b": "PKA",
    r"Jia et al": "Dissecting the NVIDIA Volta GPU Architecture", r"Khairy": "Khairy et al., 2018",
    r"NCCL 2\.28\.9": "NCCL 2.28.9", r"nccl-tests/issues/149": "nccl-tests/issues/149",
    r"nccl/issues/1397": "nccl/issues/1397", r"RCCL|ROCm/rccl": "RCCL", r"Transformer Engine": "Transformer Engine",
    r"CoCoNet": "CoCoNet", r"AsyncTP": "AsyncTP", r"EmbeddingBag\.cu": "EmbeddingBag.cu",
    r"Megatron|Korthikanti": "Megatron-LM", r"CUTLASS": "CUTLASS", r"cuBLAS": "cuBLAS", r"rocBLAS": "rocBLAS",
    r"DLRM|dlrm": "DLRM", r"ROC_SHMEM|rocSHMEM": "ROC_SHMEM", r"Tutel": "Tutel", r"Triton": "Triton",
    r"JESD235": "JESD235", r"JESD238": "JESD238", r"PCIe 4\.0": "4.0 and 5.0", r"PCIe (Gen )?5": "4.0 and 5.0",
    r"V100 GPU Architecture": "Tesla V100 GPU Architecture", r"A100 (whitepaper|datasheet)": "**A100**",
    r"Hopper whitepaper": "**Hopper**", r"H200 datasheet": "**H200**", r"H800 (SXM5 )?datasheet": "H800",
    r"CUDA C\+\+ Programming Guide": "CUDA C++ Programming Guide", r"Occupancy Calculator": "CUDA Occupancy Calculator",
    r"\bPTX\b": "PTX ISA", r"ConnectX-6": "ConnectX-6", r"MI210 datasheet|\[DS\]": "Instinct MI210",
    r"Ice Lake-SP|\bUPI\b": "**Xeon Scalable**",
    r"CDNA 2": "CDNA 2", r"CDNA 3": "CDNA 3", r"MI300X (product page|datasheet)": "MI300X", r"MI300 ISA": "MI300 ISA",
    r"GPU hardware specifications": "GPU hardware specifications", r"LLVM AMDGPU": "LLVM **AMDGPU**",
    r"experiments/validation": "experiments/validation/README.md", r"traces/FORMAT\.md": "traces/FORMAT.md",
    r"t3sim/memory/README\.md": "t3sim/memory/README.md", r"experiments/t3-sublayers/README\.md": "t3-sublayers/README.md",
    r"experiments/ficco/README\.md": "experiments/ficco/README.md", r"docs/performance\.md": "performance.md",
}


def _cited() -> str:
    """Every parameter's source and every preset's text."""
    return "\n".join([p.source for p in iter_params()] +
                     [f.read_text() for f in sorted((REPO / "configs").rglob("*.yaml"))])


def test_every_cited_document_is_listed():
    cited, doc = _cited(), DOC.read_text()
    found = [rx for rx in KNOWN if re.search(rx, cited)]
    assert len(found) > 40, sorted(set(KNOWN) - set(found))  # the list is the configs' own, not a guess
    missing = [KNOWN[rx] for rx in found if KNOWN[rx] not in doc]
    assert not missing, f"cited by the configs but not in docs/references.md: {missing}"


def test_links_resolve():
    links = re.findall(r"\]\((?!https?:)([^)#]+)", DOC.read_text())
    assert links
    assert [link for link in links if not (DOC.parent / link).exists()] == []
