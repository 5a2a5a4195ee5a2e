"""What any study of simulated results uses: reading runs, tables, plots, checked claims and validation against
measurements (pure: no simulation imports). Each paper's reproduction: :mod:`t3sim.reproduction`."""
