"""mpi4py (test_python.py): each rank calls reduce_step 4 times, each an
MPI_Allreduce of one double; rank 0 prints the sum."""
from array import array

from mpi4py import MPI


def reduce_step(comm, i):
    out = array("d", [0.0])
    comm.Allreduce(array("d", [float(i)]), out, op=MPI.SUM)
    return out[0]


def main():
    comm = MPI.COMM_WORLD
    total = 0.0
    for i in range(4):
        total += reduce_step(comm, i)
    if comm.Get_rank() == 0:
        print("total", total)


main()
