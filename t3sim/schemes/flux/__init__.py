"""FLUX: ``flux_rs`` (:mod:`.flux_rs`, its pull reduction :mod:`.flux_pull`) and ``flux_ag`` (:mod:`.flux_ag`);
options in :mod:`.options`."""
