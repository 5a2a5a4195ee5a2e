"""The T3 paper (Pati et al., ASPLOS'24) reproduced: Secs. 2.4-7.5, Figs. 4, 6, 14-20."""
