PYTHONPATH=. python3 examples/mscclang/hierarchical_allreduce.py 4 2 1 --protocol Simple
