"""Analysis of simulated results against references (pure: no simulation imports)."""
