"""T3 and T3-MCA (paper Secs. 4.1-4.5, 5.3): :mod:`.t3`; options (none) in :mod:`.options`."""
