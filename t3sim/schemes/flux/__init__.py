"""FLUX: ``flux_rs`` (:mod:`.flux_rs`, its pull reduction :mod:`.flux_pull`) and ``flux_ag`` (:mod:`.flux_ag`, its
homogeneous mode's mirrored copies :mod:`.flux_ag_mirror`); options in :mod:`.options`."""
