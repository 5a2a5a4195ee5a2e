"""FiCCO: ``ficco`` (:mod:`.ficco`, functional data :mod:`.ficco_data`, RCCL steps :mod:`.ficco_rccl`),
``ficco_char`` (:mod:`.ficco_char`), the schedule heuristic (:mod:`.heuristic`); options in :mod:`.options`."""
