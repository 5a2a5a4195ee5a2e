"""GPU compute-side building blocks: occupancy/stages/compute time and GEMM address generation."""
