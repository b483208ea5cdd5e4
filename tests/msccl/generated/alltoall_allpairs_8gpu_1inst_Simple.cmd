PYTHONPATH=. python3 examples/mscclang/alltoall_allpairs.py 8 1 --protocol Simple
