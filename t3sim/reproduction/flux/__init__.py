"""FLUX (Chang et al. 2024) reproduced at operation level: Sec. 5.1, Figs. 11-14; Sec. 6."""
