PYTHONPATH=. python3 examples/mscclang/allreduce_a100_ring.py 8 1 1 --protocol Simple
