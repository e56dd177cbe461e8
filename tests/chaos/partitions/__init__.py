"""Network-partition testing (issue 19): a lab of network namespaces (netlab), the cluster in it (lab_cluster),
faults (nemesis), the workload and its history, the checker, one run (scenario) and the soak (soak)."""
