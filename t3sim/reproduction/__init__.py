"""Each paper's reproduction with t3sim: its stated numbers, t3sim's values, the checked causes of their
differences, its figures and the experiments ``t3sim reproduce`` runs for it.

One package per paper: :mod:`~t3sim.reproduction.t3` (T3, Pati et al., ASPLOS'24), :mod:`~t3sim.reproduction.flux`
(FLUX, operation level), :mod:`~t3sim.reproduction.ficco` (FiCCO) and :mod:`~t3sim.reproduction.fused` (the fused
GPU-initiated kernels, with their 128-node scale-out model). Each holds ``numbers`` (what the paper states),
``facts`` and ``explanations`` (the claims checked against the figure tables), ``experiments`` (what runs) and its
figure tables. Shared by all: :mod:`~t3sim.reproduction.stated` (a stated number), :mod:`~t3sim.reproduction.catalog`
(which results feed which figure), :mod:`~t3sim.reproduction.report` (``REPRODUCTION.md``),
:mod:`~t3sim.reproduction.snapshot` (a committed report read back) and :mod:`~t3sim.reproduction.build` (writing it).

Reads results only (through :mod:`t3sim.analysis`) and simulates nothing; its one model of its own, the fused
kernels' scale-out iteration (:mod:`t3sim.reproduction.fused.scaleout`), is analytical.
"""
