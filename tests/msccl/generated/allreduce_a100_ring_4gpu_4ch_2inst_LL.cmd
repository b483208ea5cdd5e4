PYTHONPATH=. python3 examples/mscclang/allreduce_a100_ring.py 4 4 2 --protocol LL
