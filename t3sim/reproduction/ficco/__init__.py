"""FiCCO reproduced: schedules, inefficiencies and the heuristic (Secs. IV-VI, Figs. 7-14) at scaled shapes."""
