PYTHONPATH=. python3 examples/mscclang/allgather_ring.py 8 1 1 --protocol Simple
