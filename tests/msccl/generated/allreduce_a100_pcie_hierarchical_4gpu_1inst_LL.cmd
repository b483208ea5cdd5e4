PYTHONPATH=. python3 examples/mscclang/allreduce_a100_pcie_hierarchical.py 4 1 --protocol LL
