"""Simulation kernel: integer time, clock domains, the engine and its watchdog."""
