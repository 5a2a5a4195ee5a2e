"""Inter-GPU interconnect: topologies (networkx graphs) and links."""
